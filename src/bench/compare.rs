//! The side-by-side of krypta's numbers from this run with VaptVupt's published figures
//! (decode 209–692 MB/s, encrypted store 293 MB/s, SHA-NI 5.8x, Argon2id ≈ 839 ms, pq-box
//! ≈ 3 ms). Nothing is measured here: every krypta cell is read from tables 1, 3, 4 and 6.

use super::report::{Cell, Table};

fn num(c: Option<&Cell>) -> Option<f64> {
    match c {
        Some(Cell::Num { value, .. }) => Some(*value),
        _ => None,
    }
}

fn text(c: Option<&Cell>) -> Option<&str> {
    match c {
        Some(Cell::Text(s)) => Some(s),
        _ => None,
    }
}

/// Column index of `name` in `t` (exact, or the first starting with it).
fn col(t: &Table, name: &str) -> Option<usize> {
    t.columns
        .iter()
        .position(|c| c == name)
        .or_else(|| t.columns.iter().position(|c| c.starts_with(name)))
}

/// The cell in column `want` of the first row whose first cell starts with `row`.
fn cell<'a>(t: &'a Table, row: &str, want: &str) -> Option<&'a Cell> {
    let c = col(t, want)?;
    t.rows
        .iter()
        .find(|r| text(r.first()).is_some_and(|s| s.starts_with(row)))?
        .get(c)
}

/// The side-by-side table, or None when one of tables 1, 3, 4, 6 is missing.
pub fn side_by_side(tables: &[Table]) -> Option<Table> {
    let get = |n: u8| tables.iter().find(|t| t.number == n);
    let (t1, t3, t4, t6) = (get(1)?, get(3)?, get(4)?, get(6)?);
    let mut t = Table::new(
        8,
        "Side by side with VaptVupt's published figures",
        "VaptVupt's figures as published (its machine, not re-measured here); krypta's read \
         from tables 1, 3, 4 and 6 of this run. Different machines: compare orders of \
         magnitude and shapes, not digits."
            .into(),
        &[
            "figure",
            "VaptVupt (published)",
            "krypta (this machine)",
            "from",
        ],
    );
    // Decode range: extract MB/s of compressed settings on compressible inputs.
    let (ratio, extract, setting) = (col(t1, "ratio")?, col(t1, "extract")?, col(t1, "setting")?);
    let decode: Vec<f64> = t1
        .rows
        .iter()
        .filter(|r| text(r.get(setting)).is_some_and(|s| s.starts_with("-l")))
        .filter(|r| num(r.get(ratio)).is_some_and(|x| x > 1.05))
        .filter_map(|r| num(r.get(extract)))
        .collect();
    let lo = decode.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = decode.iter().copied().fold(0.0, f64::max);
    t.rows.push(vec![
        Cell::text("decode, MB/s"),
        Cell::text("209–692"),
        Cell::text(if decode.is_empty() {
            "–".to_string()
        } else {
            format!("{lo:.0}–{hi:.0} (one thread)")
        }),
        Cell::text("table 1, compressed settings, ratio > 1.05"),
    ]);
    let store_w1 = num(cell(t6, "encrypt only", "compress MB/s, 1"));
    let store_r1 = num(cell(t6, "encrypt only", "extract MB/s, 1"));
    let cols = &t6.columns;
    let store_wn = cols.get(3).and_then(|c| num(cell(t6, "encrypt only", c)));
    let store_rn = cols.get(5).and_then(|c| num(cell(t6, "encrypt only", c)));
    let fmt = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.0}"));
    t.rows.push(vec![
        Cell::text("encrypted store, MB/s"),
        Cell::text("293"),
        Cell::text(format!(
            "write {} / read {} (1 thread); write {} / read {} ({})",
            fmt(store_w1),
            fmt(store_r1),
            fmt(store_wn),
            fmt(store_rn),
            cols.get(3)
                .map_or("all threads", |c| c.trim_start_matches("compress MB/s, "))
        )),
        Cell::text("table 6, encrypt only"),
    ]);
    let sha_ni = t3
        .rows
        .iter()
        .find(|r| text(r.get(1)).is_some_and(|s| s.starts_with("sha2")))
        .and_then(|r| text(r.get(4)));
    t.rows.push(vec![
        Cell::text("SHA-NI speed-up over scalar SHA-256"),
        Cell::text("5.8x"),
        Cell::text(sha_ni.unwrap_or("–")),
        Cell::text("table 3, sha2 vs portable scalar"),
    ]);
    t.rows.push(vec![
        Cell::text("Argon2id key derivation, ms"),
        Cell::text("≈ 839"),
        Cell::text(
            num(cell(t4, "argon2id", "key setup")).map_or("–".to_string(), |v| {
                format!(
                    "{v:.0} ({} MiB, t={}, p={})",
                    crate::crypto::kdf::ARGON2ID_DEFAULT_M_KIB / 1024,
                    crate::crypto::kdf::ARGON2ID_DEFAULT_T,
                    crate::crypto::kdf::ARGON2ID_DEFAULT_P
                )
            }),
        ),
        Cell::text("table 4, key setup alone"),
    ]);
    t.rows.push(vec![
        Cell::text("pq-box, ms"),
        Cell::text("≈ 3"),
        Cell::text(
            text(cell(t4, "pq-box", "key setup"))
                .map_or("–".to_string(), |v| format!("{v} (seal / open)")),
        ),
        Cell::text("table 4, key setup alone"),
    ]);
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_source_tables_give_no_side_by_side() {
        let t1 = Table::new(1, "codec", String::new(), &["input"]);
        assert!(side_by_side(&[t1]).is_none());
    }
}

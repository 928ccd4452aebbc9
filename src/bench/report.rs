//! The bench report: tables of cells, their markdown and JSON forms, and the machine header.

use serde_json::{Value, json};

use super::measure::Machine;

/// One table cell: text, or a number shown with a fixed number of decimals (JSON keeps the
/// full value).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text as is.
    Text(String),
    /// A number; `decimals` digits after the point in markdown.
    Num {
        /// The value.
        value: f64,
        /// Digits after the decimal point in markdown.
        decimals: usize,
    },
    /// Not measured (tool missing, not applicable): "–" in markdown, null in JSON.
    Missing,
}

impl Cell {
    /// A text cell.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    /// A number cell with `decimals` digits shown.
    pub fn num(value: f64, decimals: usize) -> Cell {
        Cell::Num { value, decimals }
    }
    /// A number cell whose shown precision follows its size: 3 significant digits, at most
    /// 2 decimals (1234 → "1234", 12.345 → "12.3", 0.1234 → "0.12").
    pub fn auto(value: f64) -> Cell {
        let a = value.abs();
        let decimals = if a >= 100.0 {
            0
        } else if a >= 10.0 {
            1
        } else {
            2
        };
        Cell::Num { value, decimals }
    }
    fn markdown(&self) -> String {
        match self {
            Cell::Text(s) => s.replace('|', "\\|"),
            Cell::Num { value, decimals } => format!("{value:.decimals$}"),
            Cell::Missing => "–".to_string(),
        }
    }
    fn json(&self) -> Value {
        match self {
            Cell::Text(s) => json!(s),
            Cell::Num { value, .. } => json!(value),
            Cell::Missing => Value::Null,
        }
    }
}

/// One numbered table of `krypta bench`.
#[derive(Debug, Clone)]
pub struct Table {
    /// Table number, 1..=7 (see `BENCHMARKS.md`).
    pub number: u8,
    /// Title.
    pub title: String,
    /// How the numbers were taken (data, runs, threads).
    pub method: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, each as long as `columns`.
    pub rows: Vec<Vec<Cell>>,
    /// Observations computed from the numbers (which setting wins, by how much).
    pub reading: Vec<String>,
}

impl Table {
    /// An empty table.
    pub fn new(number: u8, title: &str, method: String, columns: &[&str]) -> Table {
        Table {
            number,
            title: title.to_string(),
            method,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
            reading: Vec::new(),
        }
    }

    fn markdown(&self, out: &mut String) {
        out.push_str(&format!("### Table {}: {}\n\n", self.number, self.title));
        out.push_str(&format!("Method: {}\n\n", self.method));
        out.push_str(&format!("| {} |\n", self.columns.join(" | ")));
        let align: Vec<&str> = self.columns.iter().map(|_| "---").collect();
        out.push_str(&format!("|{}|\n", align.join("|")));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(Cell::markdown).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        out.push('\n');
        if !self.reading.is_empty() {
            out.push_str("Reading (computed from the numbers above):\n\n");
            for r in &self.reading {
                out.push_str(&format!("- {r}\n"));
            }
            out.push('\n');
        }
    }

    fn json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let obj: serde_json::Map<String, Value> = self
                    .columns
                    .iter()
                    .zip(r)
                    .map(|(c, v)| (c.clone(), v.json()))
                    .collect();
                Value::Object(obj)
            })
            .collect();
        json!({
            "number": self.number,
            "title": self.title,
            "method": self.method,
            "columns": self.columns,
            "rows": rows,
            "reading": self.reading,
        })
    }
}

/// Everything one `krypta bench` run measured.
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// Where and how it ran.
    pub machine: Machine,
    /// `--quick` (smaller inputs, one run each).
    pub quick: bool,
    /// Runs per measurement (the median is shown).
    pub runs: usize,
    /// Where each fixture came from, one line each.
    pub fixtures: Vec<String>,
    /// The tables, in the order run.
    pub tables: Vec<Table>,
}

impl BenchReport {
    /// The report as markdown: a machine paragraph, the fixture list, then each table with
    /// its method line and its reading.
    pub fn to_markdown(&self) -> String {
        let m = &self.machine;
        let mut out = String::new();
        out.push_str(&format!(
            "Machine: {} ({} logical cores, all-cores columns use {} threads), {}; CPU features \
             found: {}; load average at start: {}; krypta {} ({} build); {}{}.\n\n",
            m.cpu,
            m.cores,
            m.jobs,
            m.os,
            if m.features.is_empty() {
                "none of aes, sha_ni, avx2, vaes".to_string()
            } else {
                m.features.join(", ")
            },
            m.load,
            m.version,
            m.profile,
            m.date,
            if self.quick {
                "; --quick (small inputs, one run each: indicative only)"
            } else {
                ""
            },
        ));
        out.push_str(&format!(
            "MB = 10^6 bytes. Each time is the median of {} run(s) unless a table's method says \
             otherwise; a run slower than {} s is timed once.\n\n",
            self.runs,
            super::measure::SLOW_RUN_SECS
        ));
        if !self.fixtures.is_empty() {
            out.push_str("Inputs:\n\n");
            for f in &self.fixtures {
                out.push_str(&format!("- {f}\n"));
            }
            out.push('\n');
        }
        for t in &self.tables {
            t.markdown(&mut out);
        }
        out
    }

    /// The report as JSON: `machine`, `quick`, `runs`, `fixtures` and `tables` (each with
    /// `number`, `title`, `method`, `columns`, `rows` as objects keyed by column, `reading`).
    pub fn to_json(&self) -> Value {
        let m = &self.machine;
        json!({
            "machine": {
                "cpu": m.cpu,
                "features": m.features,
                "cores": m.cores,
                "jobs": m.jobs,
                "os": m.os,
                "load": m.load,
                "profile": m.profile,
                "version": m.version,
                "date": m.date,
            },
            "quick": self.quick,
            "runs": self.runs,
            "fixtures": self.fixtures,
            "tables": self.tables.iter().map(Table::json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(9, "Sample", "one run".into(), &["name", "MB/s", "x"]);
        t.rows
            .push(vec![Cell::text("a|b"), Cell::num(12.345, 1), Cell::Missing]);
        t.reading.push("a wins".into());
        t
    }

    #[test]
    fn markdown_table_escapes_pipes_and_rounds() {
        let mut s = String::new();
        sample().markdown(&mut s);
        assert_eq!(
            s,
            "### Table 9: Sample\n\nMethod: one run\n\n| name | MB/s | x |\n|---|---|---|\n\
             | a\\|b | 12.3 | – |\n\nReading (computed from the numbers above):\n\n- a wins\n\n"
        );
    }

    #[test]
    fn json_rows_are_keyed_by_column_with_full_values() {
        let j = sample().json();
        assert_eq!(j["rows"][0]["MB/s"], json!(12.345));
        assert_eq!(j["rows"][0]["x"], Value::Null);
        assert_eq!(j["rows"][0]["name"], json!("a|b"));
    }

    #[test]
    fn auto_precision_follows_magnitude() {
        assert_eq!(Cell::auto(1234.4).markdown(), "1234");
        assert_eq!(Cell::auto(12.345).markdown(), "12.3");
        assert_eq!(Cell::auto(0.1234).markdown(), "0.12");
    }
}

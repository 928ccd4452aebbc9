//! The two generated fixtures: `redundant` (seeded log lines) and `random` (BLAKE3 XOF of a
//! fixed seed). Same bytes on every machine.

/// Seed of the `random` fixture (BLAKE3 XOF input).
pub const RANDOM_SEED: &str = "krypta bench fixture: random, v1";

/// SplitMix64 (Steele, Lea, Flood 2014): the fixtures' seeded generator.
pub(super) struct SplitMix(pub(super) u64);

impl SplitMix {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `len` bytes of log lines from 8 templates with counters and a seeded choice of template.
pub fn redundant(len: usize) -> Vec<u8> {
    const HOSTS: [&str; 4] = ["alpha", "beta", "gamma", "delta"];
    const FILES: [&str; 8] = [
        "/srv/data/db/base.sqlite",
        "/srv/data/mail/inbox.mbox",
        "/srv/data/photos/2025/index.json",
        "/home/ada/notes.md",
        "/home/ada/projects/krypta/Cargo.toml",
        "/var/log/syslog",
        "/etc/nginx/nginx.conf",
        "/opt/app/config.yaml",
    ];
    let mut rng = SplitMix(0x6b72_7970_7461); // "krypta"
    let mut out = Vec::with_capacity(len + 256);
    let mut seq = 0u64;
    while out.len() < len {
        let r = rng.next();
        let host = HOSTS[(r & 3) as usize];
        let file = FILES[((r >> 2) & 7) as usize];
        let secs = seq / 4;
        let line = match (r >> 5) % 4 {
            0 => format!(
                "2026-01-01T{:02}:{:02}:{:02}Z {host} backup[1234]: INFO wrote block {seq} of {file} (4194304 bytes, ok)\n",
                (secs / 3600) % 24,
                (secs / 60) % 60,
                secs % 60
            ),
            1 => format!(
                "2026-01-01T{:02}:{:02}:{:02}Z {host} backup[1234]: INFO verified block {seq} of {file}: digest ok\n",
                (secs / 3600) % 24,
                (secs / 60) % 60,
                secs % 60
            ),
            2 => format!(
                "2026-01-01T{:02}:{:02}:{:02}Z {host} backup[1234]: DEBUG queue depth 3, workers 8, block {seq}\n",
                (secs / 3600) % 24,
                (secs / 60) % 60,
                secs % 60
            ),
            _ => format!(
                "2026-01-01T{:02}:{:02}:{:02}Z {host} backup[1234]: INFO skipped unchanged {file}\n",
                (secs / 3600) % 24,
                (secs / 60) % 60,
                secs % 60
            ),
        };
        out.extend_from_slice(line.as_bytes());
        seq += 1;
    }
    out.truncate(len);
    out
}

/// `len` bytes of BLAKE3 XOF output of the fixed seed: incompressible, reproducible.
pub fn random(len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    blake3::Hasher::new()
        .update(RANDOM_SEED.as_bytes())
        .finalize_xof()
        .fill(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_fixtures_have_their_published_digests() {
        // The digests fixtures/data/MANIFEST.txt lists for every machine.
        assert_eq!(
            blake3::hash(&redundant(10_000_000)).to_hex().as_str(),
            "6f8fb93b20467f85a0aa72ebfeb69581b6d6b4034335c08c021a448b3d8c0c89"
        );
        assert_eq!(
            blake3::hash(&random(5_000_000)).to_hex().as_str(),
            "622a1c7c1ca6f3ddd37780716c9c87ea1ab361b299631ab18b90523094121acc"
        );
        assert_eq!(redundant(1000).len(), 1000);
        assert_eq!(&random(100)[..64], &random(64)[..]);
    }
}

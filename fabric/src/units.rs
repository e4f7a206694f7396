//! Sizes as people and IOR write them: `4096`, `64k`, `1m`, `1MiB`, `2g` (binary multiples).

/// Parses a size with an optional `k`/`m`/`g`/`t` suffix (binary, case-insensitive, an
/// optional `b`/`ib` after it).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (number, suffix) = lower.split_at(digits_end);
    if number.is_empty() {
        return Err(format!("size {text:?} does not start with a number"));
    }
    let number: u64 = number
        .parse()
        .map_err(|_| format!("size {text:?} is too large"))?;
    let shift = match suffix.trim_end_matches("ib").trim_end_matches('b') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => {
            return Err(format!(
                "size {text:?} has an unknown unit (use k, m, g or t)"
            ));
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("size {text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        for (text, bytes) in [
            ("0", 0),
            ("4096", 4096),
            ("64k", 65_536),
            ("1m", 1 << 20),
            ("1M", 1 << 20),
            ("1MiB", 1 << 20),
            ("2g", 2 << 30),
            ("3KB", 3072),
            ("1t", 1 << 40),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in [
            "",
            "m",
            "1x",
            "1.5m",
            "-1",
            "99999999999999999999",
            "16777216t",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}

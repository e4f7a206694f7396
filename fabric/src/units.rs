//! Sizes as people and IOR write them: `4096`, `64k`, `1m`, `1MiB`, `2g`, `1.5m` (binary
//! multiples).

/// Parses a size with an optional `k`/`m`/`g`/`t` suffix (binary, case-insensitive, an
/// optional `b`/`ib` after it), with a fraction of the unit as IOR takes one (`1.5m`), as long
/// as it comes to whole bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let number_end = lower
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(lower.len());
    let (number, suffix) = lower.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || fraction.contains('.') {
        return Err(format!("size {text:?} does not start with a number"));
    }
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
    let too_large = || format!("size {text:?} is too large");
    let whole: u64 = whole.parse().map_err(|_| too_large())?;
    let mut bytes = whole.checked_mul(1 << shift).ok_or_else(too_large)?;
    // A fraction of the unit (IOR's `-t 1.5m`), which must come to whole bytes.
    if !fraction.is_empty() {
        if fraction.len() > 12 {
            return Err(format!("size {text:?} has more decimals than it can mean"));
        }
        let digits: u128 = fraction.parse().map_err(|_| too_large())?;
        let scaled = digits << shift;
        let denominator = 10u128.pow(fraction.len() as u32);
        if !scaled.is_multiple_of(denominator) {
            return Err(format!("size {text:?} is not a whole number of bytes"));
        }
        let part = u64::try_from(scaled / denominator).map_err(|_| too_large())?;
        bytes = bytes.checked_add(part).ok_or_else(too_large)?;
    }
    Ok(bytes)
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
            ("1.5m", 3 << 19),
            ("0.5k", 512),
            ("2.25g", 9 << 28),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in [
            "",
            "m",
            "1x",
            "1.5",
            "0.3k",
            "1..5m",
            ".5m",
            "-1",
            "99999999999999999999",
            "16777216t",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}

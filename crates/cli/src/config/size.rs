//! Sizes with units: `4096`, `"4KiB"`, `"2 MiB"`, `"1.5GiB"`, `"16GB"`.
//!
//! Binary units (KiB, MiB, GiB, TiB) are powers of 1024; decimal ones (KB, MB, GB, TB)
//! powers of 1000, as their SI names say; `K`, `M`, `G`, `T` alone are binary, as in
//! the kernel's command line. A size must come to a whole number of bytes.

use super::raw::RawSize;

/// Bytes, or what was expected.
pub fn parse(raw: &RawSize) -> Result<u64, String> {
    match raw {
        RawSize::Bytes(b) if *b >= 0 => Ok(*b as u64),
        RawSize::Bytes(b) => Err(format!("a non-negative size, found {b}")),
        RawSize::Text(t) => parse_text(t),
    }
}

fn parse_text(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let bad = || format!("a size such as 4096, \"64MiB\" or \"4GiB\", found \"{text}\"");
    let value: f64 = num.parse().map_err(|_| bad())?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024f64.powi(2),
        "g" | "gib" => 1024f64.powi(3),
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return Err(bad()),
    };
    let bytes = value * mult;
    if !bytes.is_finite() || bytes > u64::MAX as f64 / 2.0 || bytes.fract() != 0.0 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<u64, String> {
        parse(&RawSize::Text(s.into()))
    }

    #[test]
    fn units_are_binary_or_decimal_as_named() {
        assert_eq!(p("4KiB"), Ok(4096));
        assert_eq!(p("2 MiB"), Ok(2 << 20));
        assert_eq!(p("1.5GiB"), Ok(3 << 29));
        assert_eq!(p("16GB"), Ok(16_000_000_000));
        assert_eq!(p("8g"), Ok(8 << 30));
        assert_eq!(parse(&RawSize::Bytes(4096)), Ok(4096));
    }

    #[test]
    fn nonsense_is_refused() {
        for bad in ["", "GiB", "4 XB", "-4GiB", "1.3B", "1e99TiB"] {
            assert!(p(bad).is_err(), "{bad}");
        }
        assert!(parse(&RawSize::Bytes(-1)).is_err());
    }
}

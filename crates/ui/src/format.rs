//! Number formatting for the panels and parsing of the form fields.
//!
//! Parsing only catches what the UI can see (empty fields, text that is not
//! a number); ranges are the worker's call, and its errors are shown as-is.

/// Seconds as `h:mm:ss`; `—` when unknown.
pub fn hms(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "—".into();
    }
    let s = seconds.round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// `65904` → `65,904`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A parameter count in short form: `66 K`, `10.8 M`.
pub fn short_count(n: usize) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.1} B", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1} M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.0} K", n / 1e3)
    } else {
        format!("{n}")
    }
}

/// Bytes in binary units: `3.1 MiB`.
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    const KIB: f64 = 1024.0;
    if n >= KIB * KIB * KIB {
        format!("{:.2} GiB", n / (KIB * KIB * KIB))
    } else if n >= KIB * KIB {
        format!("{:.1} MiB", n / (KIB * KIB))
    } else if n >= KIB {
        format!("{:.1} KiB", n / KIB)
    } else {
        format!("{n} B")
    }
}

/// A throughput: `812 tok/s`, `12.3 k tok/s`.
pub fn rate(per_s: f64, unit: &str) -> String {
    if !per_s.is_finite() {
        return format!("— {unit}/s");
    }
    if per_s >= 1e4 {
        format!("{:.1} k {unit}/s", per_s / 1e3)
    } else if per_s >= 100.0 {
        format!("{per_s:.0} {unit}/s")
    } else {
        format!("{per_s:.1} {unit}/s")
    }
}

/// A loss in nats/char, or `—` when it is missing, `NaN` when it diverged.
pub fn loss(value: Option<f32>) -> String {
    match value {
        None => "—".into(),
        Some(v) if v.is_finite() => format!("{v:.4}"),
        Some(v) => format!("{v}"),
    }
}

fn field<'a>(label: &str, text: &'a str) -> Result<&'a str, String> {
    let t = text.trim();
    if t.is_empty() {
        Err(format!("{label} is empty — enter a value."))
    } else {
        Ok(t)
    }
}

/// A whole number ≥ 0.
pub fn whole(label: &str, text: &str) -> Result<usize, String> {
    let t = field(label, text)?;
    t.parse()
        .map_err(|_| format!("{label}: “{t}” is not a whole number (0, 1, 2, …)."))
}

/// A 64-bit seed.
pub fn seed(label: &str, text: &str) -> Result<u64, String> {
    let t = field(label, text)?;
    t.parse()
        .map_err(|_| format!("{label}: “{t}” is not a whole number (0, 1, 2, …)."))
}

/// A decimal number such as `3e-4` or `0.8`.
pub fn decimal(label: &str, text: &str) -> Result<f32, String> {
    let t = field(label, text)?;
    match t.parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("{label}: “{t}” is not a number.")),
    }
}

/// An optional whole number; empty means “off”.
pub fn optional_whole(label: &str, text: &str) -> Result<Option<usize>, String> {
    if text.trim().is_empty() {
        Ok(None)
    } else {
        whole(label, text).map(Some)
    }
}

/// An optional decimal; empty means “off”.
pub fn optional_decimal(label: &str, text: &str) -> Result<Option<f32>, String> {
    if text.trim().is_empty() {
        Ok(None)
    } else {
        decimal(label, text).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hms_pads_minutes_and_seconds() {
        assert_eq!(hms(0.0), "0:00:00");
        assert_eq!(hms(65.4), "0:01:05");
        assert_eq!(hms(3600.0 * 2.0 + 61.0), "2:01:01");
        assert_eq!(hms(f64::INFINITY), "—");
    }

    #[test]
    fn counts_and_sizes() {
        assert_eq!(thousands(65_904), "65,904");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(short_count(65_904), "66 K");
        assert_eq!(short_count(10_770_816), "10.8 M");
        assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(bytes(512), "512 B");
    }

    #[test]
    fn parsing_names_the_field() {
        assert_eq!(whole("Steps", " 30 "), Ok(30));
        assert!(whole("Steps", "").unwrap_err().contains("Steps is empty"));
        assert!(whole("Batch size", "-1")
            .unwrap_err()
            .contains("Batch size"));
        assert!(decimal("Learning rate", "abc")
            .unwrap_err()
            .contains("not a number"));
        assert_eq!(decimal("Learning rate", "3e-4"), Ok(3e-4));
        assert!(decimal("Learning rate", "NaN").is_err());
        assert_eq!(optional_whole("Top-k", " "), Ok(None));
        assert_eq!(optional_decimal("Top-p", "0.9"), Ok(Some(0.9)));
    }
}

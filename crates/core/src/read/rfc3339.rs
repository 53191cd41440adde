//! RFC 3339 timestamps (`ts`): checked, not parsed into a time, since no
//! figure depends on it; a recorder that writes `"yesterday"` or the 30th
//! of February is told so by line instead of having its turns silently
//! misfiled by whatever reads the column later.

/// Why `s` is not an RFC 3339 date-time (section 5.6: `full-date "T"
/// full-time`, a `t` or a space allowed for the `T`, `Z`/`z` or a numeric
/// offset), or None when it is one. A leap second (`:60`) is allowed, as
/// the grammar allows it.
pub fn problem(s: &str) -> Option<&'static str> {
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| -> Option<u32> {
        let part = b.get(from..from + n)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |acc, d| acc * 10 + u32::from(d - b'0')))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    if let Some(why) = date_problem(s) {
        return Some(why);
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return Some("the date is not followed by T and a time");
    }
    let (Some(h), Some(m), Some(sec)) = (digits(11, 2), digits(14, 2), digits(17, 2)) else {
        return Some("its time is not HH:MM:SS");
    };
    if !at(13, b':') || !at(16, b':') {
        return Some("its time is not HH:MM:SS");
    }
    if h > 23 || m > 59 || sec > 60 {
        return Some("its time is out of range");
    }
    let mut i = 19;
    if at(i, b'.') {
        let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return Some("its fraction of a second has no digits");
        }
        i += 1 + n;
    }
    match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => None,
        Some(b'+' | b'-') if b.len() == i + 6 => {
            match (digits(i + 1, 2), at(i + 3, b':'), digits(i + 4, 2)) {
                (Some(oh), true, Some(om)) if oh <= 23 && om <= 59 => None,
                _ => Some("its offset is not +HH:MM or -HH:MM"),
            }
        }
        _ => Some("it does not end with Z or an offset +HH:MM"),
    }
}

/// Why `s` does not open with a calendar date `YYYY-MM-DD` (a real day of
/// its month), or None when it does.
pub fn date_problem(s: &str) -> Option<&'static str> {
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| -> Option<u32> {
        let part = b.get(from..from + n)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |acc, d| acc * 10 + u32::from(d - b'0')))
    };
    let (Some(year), Some(month), Some(day)) = (digits(0, 4), digits(5, 2), digits(8, 2)) else {
        return Some("it does not open with a date YYYY-MM-DD");
    };
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return Some("it does not open with a date YYYY-MM-DD");
    }
    if !(1..=12).contains(&month) {
        return Some("its month is not 01-12");
    }
    if day == 0 || day > days_in(year, month) {
        return Some("its day is not a day of that month");
    }
    None
}

fn days_in(year: u32, month: u32) -> u32 {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of an RFC 3339 time's date (`YYYY-MM-DD...`),
/// as recorded (its own offset); None when it does not start with one.
pub fn day_number(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        ts.get(r)?.bytes().try_fold(0i64, |a, c| {
            c.is_ascii_digit().then(|| a * 10 + i64::from(c - b'0'))
        })
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// Seconds since 1970-01-01T00:00:00Z of the instant an RFC 3339
/// date-time names (its offset applied, a fraction of a second dropped),
/// or of midnight UTC for a bare date; None for anything else.
pub fn unix_seconds(s: &str) -> Option<i64> {
    let day = day_number(s)?;
    if s.len() == 10 {
        return (date_problem(s).is_none()).then_some(day * 86_400);
    }
    if problem(s).is_some() {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> i64 {
        s[r].bytes().fold(0, |a, c| a * 10 + i64::from(c - b'0'))
    };
    let clock = num(11..13) * 3_600 + num(14..16) * 60 + num(17..19);
    let offset = match s.as_bytes()[s.len() - 1] {
        b'Z' | b'z' => 0,
        _ => {
            let o = s.len() - 6;
            let sign = if s.as_bytes()[o] == b'-' { -1 } else { 1 };
            sign * (num(o + 1..o + 3) * 3_600 + num(o + 4..o + 6) * 60)
        }
    };
    Some(day * 86_400 + clock - offset)
}

#[cfg(test)]
mod tests {
    use super::problem;

    #[test]
    fn accepts_rfc3339() {
        for s in [
            "2026-11-30T12:00:00Z",
            "2026-11-30t12:00:00z",
            "2026-11-30 12:00:00Z",
            "2026-11-30T12:00:00.123456789+01:00",
            "2024-02-29T23:59:60-08:30",
            "2000-02-29T00:00:00Z",
        ] {
            assert_eq!(problem(s), None, "{s}");
        }
    }

    #[test]
    fn refuses_the_rest_with_a_reason() {
        for (s, why) in [
            ("yesterday", "date"),
            ("2026-11-30", "followed by T"),
            ("2026-13-01T00:00:00Z", "month"),
            ("2026-02-29T00:00:00Z", "day"),
            ("1900-02-29T00:00:00Z", "day"),
            ("2026-04-31T00:00:00Z", "day"),
            ("2026-11-30T24:00:00Z", "out of range"),
            ("2026-11-30T12:00:00", "end with Z"),
            ("2026-11-30T12:00:00.Z", "fraction"),
            ("2026-11-30T12:00:00+0100", "offset"),
            ("2026-11-30T12:00:00+01:00x", "offset"),
            ("2026-11-30T12:00Z", "HH:MM:SS"),
            ("２026-11-30T12:00:00Z", "date"),
        ] {
            let got = problem(s).unwrap_or_else(|| panic!("{s} accepted"));
            assert!(got.contains(why), "{s}: {got}");
        }
    }
}

/// A time in nanoseconds since the Unix epoch as RFC 3339 in UTC, with
/// every nanosecond digit (`2026-11-30T12:00:00.261524520Z`). (A `u64` of
/// nanoseconds ends in 2554, so the year always has four digits.)
pub fn from_unix_nanos(nanos: u64) -> String {
    let secs = nanos / 1_000_000_000;
    let frac = nanos % 1_000_000_000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{frac:09}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod unix_tests {
    use super::*;

    #[test]
    fn unix_nanos_as_rfc3339() {
        assert_eq!(from_unix_nanos(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            from_unix_nanos(1_796_102_390_261_524_520),
            "2026-12-01T05:19:50.261524520Z"
        );
        assert_eq!(
            from_unix_nanos(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000000000Z"
        );
        let last = from_unix_nanos(u64::MAX);
        assert_eq!(last, "2554-07-21T23:34:33.709551615Z");
        assert_eq!(problem(&last), None);
    }

    /// The instant, offsets applied: a local evening is the next UTC day.
    #[test]
    fn instants_in_utc() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_seconds("1970-01-02"), Some(86_400));
        assert_eq!(
            unix_seconds("2026-12-03T23:30:00-02:00"),
            unix_seconds("2026-12-04T01:30:00Z")
        );
        assert_eq!(
            unix_seconds("2026-12-03T01:00:00.75+05:30"),
            Some(unix_seconds("2026-12-02").unwrap() + 19 * 3_600 + 30 * 60)
        );
        assert_eq!(unix_seconds("2026-02-30T10:00:00Z"), None);
        assert_eq!(unix_seconds("yesterday"), None);
    }
}

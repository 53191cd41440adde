//! How `monitor` cuts traffic into periods. Its state counts by slot: the
//! day of each turn's `ts` (the calendar day, at `--timezone`'s offset,
//! UTC by default, of the instant it records) and, with a
//! release field, the release the turn names. The periods the files show
//! group those slots: each day, its ISO week, the release it ran under by
//! date (`--release-at`), or the release it names (`--release-field`,
//! ordered by the first day each was seen).

use crate::cmd::plan::scan::day_number;
use crate::read::turn::Turn;
use crate::replay::design::Strata;

/// Between a slot's day and its release.
const SEP: char = '\t';

/// How the periods are cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cut {
    Day,
    Week,
    /// Releases from these days (days since 1970-01-01, ascending), as
    /// given.
    Release(Vec<(i64, String)>),
    /// The release each turn names (the value at a path into its scope).
    Field,
}

impl Cut {
    /// The cut `--by`, `--release-at` and `--release-field` make, or why
    /// none.
    pub fn parse(
        by: &str,
        release_at: &[String],
        field: bool,
    ) -> Result<Cut, crate::options::Said> {
        use crate::vocab::Setting::{By, ReleaseAt, ReleaseField};
        match (by, release_at.is_empty(), field) {
            ("day", true, _) => Ok(Cut::Day),
            ("week", true, _) => Ok(Cut::Week),
            ("release", false, false) => {
                let mut at = Vec::new();
                for d in release_at {
                    match day_number(d).filter(|_| is_date(d)) {
                        Some(n) => at.push((n, d.clone())),
                        None => return Err(format!("release date {d:?}: give YYYY-MM-DD").into()),
                    }
                }
                at.sort();
                at.dedup_by_key(|x| x.0);
                Ok(Cut::Release(at))
            }
            ("release", true, true) => Ok(Cut::Field),
            ("release", false, true) => Err(crate::said![
                "give the releases by ",
                ReleaseAt,
                " dates or by ",
                ReleaseField,
                ", not both"
            ]),
            ("release", true, false) => Err(crate::said![
                By,
                " release takes the releases' dates (",
                ReleaseAt,
                " YYYY-MM-DD, once per release) or the field that names them (",
                ReleaseField,
                " scope.KEY)"
            ]),
            ("day" | "week", false, _) => {
                Err(crate::said![ReleaseAt, " goes with ", By, " release"])
            }
            (other, _, _) => Err(crate::said![
                By,
                format!(" {other:?}: give day, week or release")
            ]),
        }
    }

    /// The period of a slot ([`slot_of`]).
    pub fn of_slot(&self, slot: &str) -> String {
        let (day, release) = slot.split_once(SEP).unwrap_or((slot, ""));
        match self {
            Cut::Field => release.to_string(),
            _ => self.of_day(day),
        }
    }

    /// The period of a day (`YYYY-MM-DD`, as [`day_of`] gives it).
    pub fn of_day(&self, day: &str) -> String {
        let n = day_number(day).unwrap_or(0);
        match self {
            Cut::Day => day.to_string(),
            Cut::Week => iso_week(n),
            Cut::Release(at) => match at.iter().rev().find(|a| a.0 <= n) {
                Some(a) => a.1.clone(),
                None => format!("(before {})", at[0].1),
            },
            Cut::Field => day.to_string(),
        }
    }
}

/// The slot a turn is counted in: its day, and with a release field
/// (`scope.KEY...`) the release it names (`(none)` where it names none).
pub fn slot_of(t: &Turn, field: Option<&Strata>, offset: i64) -> Result<String, &'static str> {
    let day = day_at(t.ts.as_deref(), offset)?;
    Ok(match field {
        None => day,
        Some(f) => format!("{day}{SEP}{}", f.of(t).replace(SEP, " ")),
    })
}

/// The day of a slot.
pub fn day_of_slot(slot: &str) -> &str {
    slot.split_once(SEP).map_or(slot, |s| s.0)
}

/// The day of a turn recorded at `ts` (its date as recorded, in its own
/// offset): what a monitor's state counts by. Err says why it has none.
pub fn day_of(ts: Option<&str>) -> Result<String, &'static str> {
    let ts = ts.ok_or("the turn records no ts, so its day is unknown")?;
    day_number(ts).ok_or("its ts does not start with a date YYYY-MM-DD")?;
    // A day past its month's end (02-30) is not a day.
    if crate::read::rfc3339::date_problem(ts).is_some() {
        return Err("its ts's date is not a day of the calendar");
    }
    Ok(ts[..10].to_string())
}

/// The day of a turn recorded at `ts`, at an offset of `offset` seconds
/// from UTC: the calendar day there of the instant it records (a local
/// 23:30 at -02:00 is the next UTC day). Err says why it has none.
pub fn day_at(ts: Option<&str>, offset: i64) -> Result<String, &'static str> {
    let day = day_of(ts)?;
    let ts = ts.unwrap_or_default();
    // A UTC time at offset 0 is its own date (the common case, no
    // arithmetic).
    if offset == 0 && matches!(ts.as_bytes().last(), Some(b'Z' | b'z')) {
        return Ok(day);
    }
    let at = crate::read::rfc3339::unix_seconds(ts).ok_or("its ts is not an RFC 3339 time")?;
    Ok(date_of_day((at + offset).div_euclid(86_400)))
}

/// The offset `--timezone` gives, in seconds east of UTC: `UTC` (or `Z`)
/// or `+HH:MM` / `-HH:MM`.
pub fn offset_of(tz: &str) -> Result<i64, crate::options::Said> {
    let bad = || {
        crate::said![
            crate::vocab::Setting::Timezone,
            format!(" {tz:?}: give UTC or an offset +HH:MM or -HH:MM (a fixed offset: the days of a zone with summer time shift by an hour twice a year)")
        ]
    };
    if tz.eq_ignore_ascii_case("utc") {
        return Ok(0);
    }
    // The offset as RFC 3339 reads one: the instant of a local midnight
    // lies `offset` seconds before the UTC one.
    match crate::read::rfc3339::unix_seconds(&format!("1970-01-02T00:00:00{tz}")) {
        Some(at) if tz.len() == 6 || tz == "Z" => Ok(86_400 - at),
        _ => Err(bad()),
    }
}

/// `YYYY-MM-DD` of a day (days since 1970-01-01).
pub fn date_of_day(day: i64) -> String {
    let (y, m, d) = civil(day);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Whether `d` is exactly a calendar date `YYYY-MM-DD`.
pub fn is_date(d: &str) -> bool {
    d.len() == 10 && crate::read::rfc3339::date_problem(d).is_none()
}

/// The ISO week of a day (days since 1970-01-01), as `YYYY-Www`.
pub fn iso_week(day: i64) -> String {
    // 1970-01-01 was a Thursday; Monday is 0.
    let weekday = (day + 3).rem_euclid(7);
    let thursday = day - weekday + 3;
    let year = civil_year(thursday);
    let jan1 = day_number(&format!("{year:04}-01-01")).unwrap_or(thursday);
    format!("{year:04}-W{:02}", (thursday - jan1) / 7 + 1)
}

/// The year of a day.
fn civil_year(day: i64) -> i64 {
    civil(day).0
}

/// (year, month, day) of a day since 1970-01-01 (Howard Hinnant's
/// civil_from_days).
fn civil(day: i64) -> (i64, i64, i64) {
    let z = day + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ISO weeks at the year's edges (2020-12-31 is 2020-W53, 2021-01-03
    /// too; 2024-12-30 is 2025-W01).
    #[test]
    fn iso_weeks_at_the_edges() {
        let w = |d: &str| iso_week(day_number(d).unwrap());
        assert_eq!(w("2020-12-31"), "2020-W53");
        assert_eq!(w("2021-01-03"), "2020-W53");
        assert_eq!(w("2021-01-04"), "2021-W01");
        assert_eq!(w("2024-12-30"), "2025-W01");
        assert_eq!(w("2026-12-03"), "2026-W49");
    }

    #[test]
    fn releases_take_the_latest_date_at_or_before() {
        let c = Cut::parse(
            "release",
            &["2026-11-20".into(), "2026-11-02".into()],
            false,
        )
        .unwrap();
        let of = |ts: &str| c.of_day(&day_of(Some(ts)).unwrap());
        assert_eq!(of("2026-11-01T23:00:00Z"), "(before 2026-11-02)");
        assert_eq!(of("2026-11-02T00:00:00Z"), "2026-11-02");
        assert_eq!(of("2026-12-01T00:00:00+05:00"), "2026-11-20");
        assert!(day_of(None).is_err());
        assert!(day_of(Some("11/02/2026")).is_err());
        assert!(day_of(Some("2026-02-30T10:00:00Z")).is_err());
        assert!(day_of(Some("2024-02-29T10:00:00Z")).is_ok());
        assert!(Cut::parse("release", &["2026-02-30".into()], false).is_err());
        assert!(Cut::parse("release", &[], false).is_err());
        assert!(Cut::parse("release", &["2026-11-02".into()], true).is_err());
        assert!(Cut::parse("day", &["2026-11-02".into()], false).is_err());
        assert_eq!(Cut::parse("release", &[], true), Ok(Cut::Field));
    }
}

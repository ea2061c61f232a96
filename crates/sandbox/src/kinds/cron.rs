//! A CronJob's `schedule`, checked as upstream checks it: the standard five-field syntax of the
//! cron library kube-controller-manager uses (`github.com/robfig/cron/v3`, `ParseStandard`) —
//! `*`, `?`, ranges, steps, lists, month and weekday names, the `@hourly`…`@yearly` descriptors
//! and `@every <duration>` — with its error texts, and no `TZ=` or `CRON_TZ=` prefix (1.32
//! refuses it: the `timeZone` field says where).

/// One field's name-free bounds: minute, hour, day of month, month, day of week.
const BOUNDS: [(u32, u32); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];

const MONTHS: [&str; 12] =
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// Why `schedule` is not a valid schedule, in upstream's words; `None` when it is.
#[must_use]
pub fn schedule_error(schedule: &str) -> Option<String> {
    if schedule.contains("TZ") {
        return Some("cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into());
    }
    let schedule = schedule.trim();
    if let Some(descriptor) = schedule.strip_prefix('@') {
        return match descriptor {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => None,
            d if d.starts_with("every ") => {
                let duration = d["every ".len()..].trim();
                go_duration_ok(duration).then_some(()).map_or_else(
                    || Some(format!("failed to parse duration @{d}: time: invalid duration \"{duration}\"")),
                    |()| None,
                )
            }
            _ => Some(format!("unrecognized descriptor: @{descriptor}")),
        };
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields.len() != 5 {
        return Some(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" ")));
    }
    fields.iter().enumerate().find_map(|(i, f)| field_error(f, i))
}

/// Whether `d` is a Go duration (`1h30m`, `90s`, `1.5h`).
fn go_duration_ok(d: &str) -> bool {
    let mut rest = d;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let Some(unit) = ["ns", "us", "µs", "ms", "s", "m", "h"].iter().find(|u| rest.starts_with(**u))
        else {
            return false;
        };
        rest = &rest[unit.len()..];
    }
    true
}

fn field_error(field: &str, index: usize) -> Option<String> {
    field.split(',').find_map(|part| range_error(part, index))
}

/// A value of field `index`: a number, or a month or weekday name.
fn value(s: &str, index: usize) -> Result<u32, String> {
    let names: &[&str] = match index {
        3 => &MONTHS,
        4 => &DAYS,
        _ => &[],
    };
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
        return Ok(u32::try_from(i).unwrap_or(0) + if index == 3 { 1 } else { 0 });
    }
    s.parse::<u32>()
        .map_err(|_| format!("failed to parse int from {s}: strconv.Atoi: parsing {s:?}: invalid syntax"))
}

/// `getRange`'s checks of one comma-separated part.
fn range_error(part: &str, index: usize) -> Option<String> {
    let (min, max) = BOUNDS[index];
    let (range, step) = match part.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (part, None),
    };
    let (start, end) = if range == "*" || range == "?" {
        (min, max)
    } else {
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (a, Some(b)),
            None => (range, None),
        };
        let start = match value(a, index) {
            Ok(v) => v,
            Err(e) => return Some(e),
        };
        let end = match b.map(|b| value(b, index)) {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Some(e),
            None if step.is_some() => max,
            None => start,
        };
        (start, end)
    };
    if let Some(step) = step {
        match step.parse::<u32>() {
            Ok(0) => return Some(format!("step of range should be a positive number: {part}")),
            Ok(_) => {}
            Err(_) => {
                return Some(format!(
                    "failed to parse int from {step}: strconv.Atoi: parsing {step:?}: invalid syntax"
                ));
            }
        }
    }
    if start < min {
        return Some(format!("beginning of range ({start}) below minimum ({min}): {part}"));
    }
    if end > max {
        return Some(format!("end of range ({end}) above maximum ({max}): {part}"));
    }
    if start > end {
        return Some(format!("beginning of range ({start}) beyond end of range ({end}): {part}"));
    }
    None
}

/// A parsed schedule: the times it fires, as robfig/cron's `SpecSchedule` finds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// Five fields, each the set of values it allows (bit `i` for value `i`); whether the day
    /// of month or of week was `*` (both restricted: either may match).
    Fields {
        /// Minutes 0–59.
        minutes: u64,
        /// Hours 0–23.
        hours: u64,
        /// Days of the month 1–31.
        days: u64,
        /// Months 1–12.
        months: u64,
        /// Days of the week, Sunday 0.
        weekdays: u64,
        /// The day of the month was `*`.
        any_day: bool,
        /// The day of the week was `*`.
        any_weekday: bool,
    },
    /// `@every <duration>`: a fixed interval, in seconds.
    Every(i64),
}

impl Schedule {
    /// Parses a schedule [`schedule_error`] accepts.
    ///
    /// # Errors
    ///
    /// The same message [`schedule_error`] gives.
    pub fn parse(schedule: &str) -> Result<Self, String> {
        if let Some(e) = schedule_error(schedule) {
            return Err(e);
        }
        let schedule = schedule.trim();
        let expanded = match schedule {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        if let Some(d) = expanded.strip_prefix("@every ") {
            let span: jiff::Span = d.trim().parse().map_err(|e| format!("{e}"))?;
            let secs = span.total(jiff::Unit::Second).map_err(|e| format!("{e}"))?;
            // Intervals shorter than a second run every second, as the library rounds them.
            #[allow(clippy::cast_possible_truncation)]
            return Ok(Self::Every((secs as i64).max(1)));
        }
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let set = |i: usize| -> Result<u64, String> {
            let (min, max) = BOUNDS[i];
            let mut bits = 0u64;
            for part in fields[i].split(',') {
                let (range, step) =
                    part.split_once('/').map_or((part, 1), |(r, s)| (r, s.parse().unwrap_or(1)));
                let (a, b) = if range == "*" || range == "?" {
                    (min, max)
                } else {
                    let (a, b) = range.split_once('-').map_or((range, None), |(a, b)| (a, Some(b)));
                    let a = value(a, i)?;
                    let b = match b {
                        Some(b) => value(b, i)?,
                        None if part.contains('/') => max,
                        None => a,
                    };
                    (a, b)
                };
                for v in (a..=b).step_by(usize::try_from(step).unwrap_or(1).max(1)) {
                    bits |= 1 << v;
                }
            }
            Ok(bits)
        };
        let star = |i: usize| fields[i].starts_with('*') || fields[i].starts_with('?');
        Ok(Self::Fields {
            minutes: set(0)?,
            hours: set(1)?,
            days: set(2)?,
            months: set(3)?,
            weekdays: set(4)?,
            any_day: star(2),
            any_weekday: star(4),
        })
    }

    /// The first time after `t` (whole minutes; seconds for `@every`) the schedule fires, in
    /// `tz`; `None` when none comes within five years.
    #[must_use]
    pub fn next_after(&self, t: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> Option<jiff::Timestamp> {
        use jiff::ToSpan;
        let (minutes, hours, days, months, weekdays, any_day, any_weekday) = match *self {
            Self::Every(secs) => {
                let next = t.checked_add(jiff::SignedDuration::from_secs(secs)).ok()?;
                return next.round(jiff::Unit::Second).ok();
            }
            Self::Fields { minutes, hours, days, months, weekdays, any_day, any_weekday } => {
                (minutes, hours, days, months, weekdays, any_day, any_weekday)
            }
        };
        let has = |bits: u64, v: i8| bits & (1u64 << u32::try_from(v).unwrap_or(0)) != 0;
        let day_ok = |d: &jiff::civil::DateTime| {
            let dom = has(days, d.day());
            let dow = has(weekdays, d.weekday().to_sunday_zero_offset());
            if any_day || any_weekday { dom && dow } else { dom || dow }
        };
        let start = t.to_zoned(tz.clone()).datetime();
        let mut d = start.checked_add(1.minute()).ok()?.with().second(0).subsec_nanosecond(0).build().ok()?;
        let limit = start.checked_add(5.years()).ok()?;
        while d < limit {
            if !has(months, d.month()) {
                d = d.first_of_month().checked_add(1.month()).ok()?.with().hour(0).minute(0).build().ok()?;
                continue;
            }
            if !day_ok(&d) {
                d = d.date().checked_add(1.day()).ok()?.to_datetime(jiff::civil::time(0, 0, 0, 0));
                continue;
            }
            if !has(hours, d.hour()) {
                d = d.with().minute(0).build().ok()?.checked_add(1.hour()).ok()?;
                continue;
            }
            if !has(minutes, d.minute()) {
                d = d.checked_add(1.minute()).ok()?;
                continue;
            }
            return d.to_zoned(tz.clone()).ok().map(|z| z.timestamp());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_fire_when_cron_says() {
        let utc = jiff::tz::TimeZone::UTC;
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap();
        let next = |sched: &str, from: &str| {
            Schedule::parse(sched).unwrap().next_after(at(from), &utc).unwrap().to_string()
        };
        assert_eq!(next("*/5 * * * *", "2026-01-01T10:02:30Z"), "2026-01-01T10:05:00Z");
        assert_eq!(next("30 2 * * *", "2026-01-01T10:02:00Z"), "2026-01-02T02:30:00Z");
        assert_eq!(next("@monthly", "2026-01-15T00:00:00Z"), "2026-02-01T00:00:00Z");
        // 2026-01-05 is a Monday; day 10 or a Monday, whichever comes first.
        assert_eq!(next("0 0 10 * mon", "2026-01-01T00:00:00Z"), "2026-01-05T00:00:00Z");
        assert_eq!(next("0 0 * * sun", "2026-01-01T00:00:00Z"), "2026-01-04T00:00:00Z");
        assert_eq!(next("@every 90s", "2026-01-01T00:00:00Z"), "2026-01-01T00:01:30Z");
        assert_eq!(next("0 0 29 2 *", "2026-03-01T00:00:00Z"), "2028-02-29T00:00:00Z");
    }

    #[test]
    fn schedules_a_cluster_accepts() {
        for ok in [
            "*/5 * * * *",
            "0 3 * * *",
            "0 0 1 JAN-MAR MON",
            "15,45 9-17 * * 1-5",
            "0 0 ? * SUN",
            "@daily",
            "@every 1h30m",
        ] {
            assert_eq!(schedule_error(ok), None, "{ok}");
        }
    }

    #[test]
    fn schedules_a_cluster_refuses_in_its_words() {
        assert_eq!(schedule_error("* * *").unwrap(), "expected exactly 5 fields, found 3: [* * *]");
        assert_eq!(schedule_error("70 * * * *").unwrap(), "end of range (70) above maximum (59): 70");
        assert_eq!(schedule_error("0 0 0 * *").unwrap(), "beginning of range (0) below minimum (1): 0");
        assert_eq!(schedule_error("*/0 * * * *").unwrap(), "step of range should be a positive number: */0");
        assert!(schedule_error("x * * * *").unwrap().starts_with("failed to parse int from x"));
        assert_eq!(schedule_error("@sometimes").unwrap(), "unrecognized descriptor: @sometimes");
        assert!(schedule_error("CRON_TZ=UTC 0 * * * *").unwrap().contains("use timeZone field"));
    }
}

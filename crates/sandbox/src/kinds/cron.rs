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

#[cfg(test)]
mod tests {
    use super::*;

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

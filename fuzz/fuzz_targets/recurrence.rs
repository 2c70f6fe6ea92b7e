//! Recurrences as a tool writes them (`hearth::local_time`): `daily`, `weekdays`, `weekly
//! on mon,thu`, `monthly on 15`, and RFC 5545 RRULEs, each anchored at a local start in a
//! member's zone, and their next occurrences.
//!
//! Input: `key: value` lines; `zone`, `now` (the clock), `start` (the local start,
//! `2025-03-30 02:30`), `after` (the instant to look after) and each `rule` to try.
//!
//! Properties: what reads writes back to the same recurrence, and its RRULE form reads as
//! an RRULE; each refusal names the value. Anchored, a recurrence fires (or says it never
//! does); each next occurrence is after the instant asked about and never before the
//! start; asking again from just before an answer, or from anywhere between the question
//! and the answer, gives the same answer (nothing skipped, the same wherever a long rule is
//! picked up); asking from earlier never gives a later one; a simple recurrence and its
//! RRULE form fire at the same instants; what is said back names the zone. Bounded time:
//! libFuzzer's `-timeout` turns an input that runs too long into a finding.
#![no_main]

use chrono::{DateTime, Datelike, NaiveDateTime, TimeDelta, Utc};
use hearth::local_time::phrasing::say_recurrence;
use hearth::local_time::{LocalTimeError, Recurrence, RecurringTime, ZoneName, resolve_local};
use hearth_fuzz_checks::fields::Fields;
use libfuzzer_sys::fuzz_target;

const DEFAULT_NOW: &str = "2025-03-29T12:00:00Z";
/// A night Europe/Berlin skips 02:00-03:00.
const DEFAULT_START: &str = "2025-03-30 02:30";
/// Occurrences followed from each answer.
const STEPS: usize = 6;

fn in_range(year: i32) -> bool {
    (2000..2100).contains(&year)
}

fn check_refusal(error: &LocalTimeError, value: &str) {
    let said = error.to_string();
    let start: String = value.trim().chars().take(20).collect();
    assert!(
        said.to_ascii_uppercase()
            .contains(&start.to_ascii_uppercase()),
        "the refusal {said:?} does not name {value:?}"
    );
}

/// The next occurrence after `after`, checked against the questions that must give the
/// same answer.
fn next_checked(recurring: &RecurringTime, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let next = recurring.next_after(after);
    let Some(next) = next else {
        // Ended: nothing later either.
        assert_eq!(recurring.next_after(after + TimeDelta::days(400)), None);
        return None;
    };
    let start = resolve_local(recurring.zone, recurring.start).instant;
    assert!(next > after, "{recurring:?} after {after} gave {next}");
    assert!(
        next >= start,
        "{recurring:?} fired at {next}, before its start {start}"
    );
    let just_before = next - TimeDelta::seconds(1);
    if just_before > after {
        assert_eq!(
            recurring.next_after(just_before),
            Some(next),
            "{recurring:?}: from {after} the next is {next}, from {just_before} it is not"
        );
        let between = after + (next - after) / 2;
        assert_eq!(
            recurring.next_after(between),
            Some(next),
            "{recurring:?}: from {after} the next is {next}, from {between} it is not"
        );
    }
    let earlier = after - TimeDelta::days(1);
    if let Some(from_earlier) = recurring.next_after(earlier) {
        assert!(
            from_earlier <= next,
            "{recurring:?}: from {earlier} the next is {from_earlier}, after {next}"
        );
    }
    Some(next)
}

fn occurrences(recurring: &RecurringTime, mut after: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let mut found = Vec::new();
    for _ in 0..STEPS {
        let Some(next) = next_checked(recurring, after) else {
            break;
        };
        found.push(next);
        after = next;
    }
    found
}

fn check_rule(text: &str, zone: ZoneName, start: NaiveDateTime, after: DateTime<Utc>) {
    let recurrence = match Recurrence::parse(text) {
        Ok(recurrence) => recurrence,
        Err(error) => return check_refusal(&error, text),
    };
    let written = recurrence.to_string();
    assert_eq!(
        Recurrence::parse(&written).as_ref(),
        Ok(&recurrence),
        "{written:?} reads back"
    );
    let as_rrule = match Recurrence::parse(&recurrence.to_rrule()) {
        Ok(Recurrence::Rrule(rule)) => Recurrence::Rrule(rule),
        other => panic!(
            "the RRULE form {:?} of {written:?} reads as {other:?}",
            recurrence.to_rrule()
        ),
    };
    let recurring = match RecurringTime::new(zone, start, recurrence.clone()) {
        Ok(recurring) => recurring,
        Err(error) => {
            assert!(
                matches!(error, LocalTimeError::NeverFires { .. }),
                "{error:?}"
            );
            return check_refusal(&error, &written);
        }
    };
    let said = say_recurrence(&recurring);
    assert!(said.contains(zone.name()), "{said:?}");
    let found = occurrences(&recurring, after);
    if !matches!(recurrence, Recurrence::Rrule(_)) {
        assert!(!found.is_empty(), "{written:?} stopped");
        let as_rrule = RecurringTime::new(zone, start, as_rrule).expect("the RRULE form fires too");
        assert_eq!(
            occurrences(&as_rrule, after),
            found,
            "{written:?} and its RRULE {:?} fire apart",
            recurrence.to_rrule()
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let fields = Fields::read(text, &["zone", "now", "start", "after", "rule"]);
    let zone = fields
        .get("zone")
        .and_then(|zone| ZoneName::parse(zone).ok())
        .unwrap_or_else(|| ZoneName::parse("Europe/Berlin").unwrap());
    let default_now: DateTime<Utc> = DEFAULT_NOW.parse().unwrap();
    let now = Some(fields.instant("now", DEFAULT_NOW))
        .filter(|now| in_range(now.year()))
        .unwrap_or(default_now);
    let start = Some(fields.local("start", DEFAULT_START))
        .filter(|start| in_range(start.year()))
        .unwrap_or_else(|| fields.local("", DEFAULT_START));
    let after = Some(fields.instant("after", &now.to_rfc3339()))
        .filter(|after| in_range(after.year()))
        .unwrap_or(now);
    for rule in fields.all("rule") {
        check_rule(rule, zone, start, after);
    }
});

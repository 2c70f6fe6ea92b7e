//! Tests of the cache of calendar readings: the same text read once, a changed text read
//! afresh, an unreadable text's reason kept, and the bounds on texts and bytes.

use std::sync::Arc;

use super::*;

fn calendar(summaries: &[&str]) -> String {
    let events: String = summaries
        .iter()
        .enumerate()
        .map(|(n, summary)| {
            format!(
                "BEGIN:VEVENT\r\nUID:e{n}\r\nDTSTART:20261015T170000Z\r\nDURATION:PT1H\r\nSUMMARY:{summary}\r\nEND:VEVENT\r\n"
            )
        })
        .collect();
    format!("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n{events}END:VCALENDAR\r\n")
}

fn summaries(read: &ReadGroups) -> Vec<String> {
    read.as_ref()
        .unwrap()
        .iter()
        .map(|group| group[0].summary.clone())
        .collect()
}

#[test]
fn the_same_text_is_read_once_and_a_changed_one_afresh() {
    let cache = ReadCache::default();
    let text = calendar(&["Swimming", "Piano"]);
    let first = cache.read(&text);
    let again = cache.read(&text.clone());
    assert!(
        Arc::ptr_eq(first.as_ref().unwrap(), again.as_ref().unwrap()),
        "the second reading is the kept one"
    );
    assert_eq!(summaries(&again), ["Swimming", "Piano"]);
    // Grouped as a search reads them: what read_events gives, by UID.
    let plain = by_uid(read_events(&text).unwrap());
    assert_eq!(&plain[..], &again.as_ref().unwrap()[..]);

    let changed = calendar(&["Swimming", "Piano", "Dentist"]);
    assert_eq!(
        summaries(&cache.read(&changed)),
        ["Swimming", "Piano", "Dentist"]
    );
    assert_eq!(cache.size(), (2, text.len() + changed.len()));
    // The first text is still kept.
    assert!(Arc::ptr_eq(
        first.as_ref().unwrap(),
        cache.read(&text).as_ref().unwrap()
    ));
}

#[test]
fn an_unreadable_text_keeps_its_reason() {
    let cache = ReadCache::default();
    let nested = "BEGIN:VCALENDAR\r\n".repeat(50) + "END:VCALENDAR\r\n".repeat(50).as_str();
    let first = cache.read(&nested).unwrap_err();
    assert_eq!(cache.read(&nested).unwrap_err(), first);
    assert!(first.to_string().contains("nested more than"), "{first}");
    assert_eq!(
        cache.read("not a calendar").unwrap_err(),
        read_events("not a calendar").unwrap_err()
    );
}

#[test]
fn many_texts_are_bounded_and_the_least_recently_used_let_go_first() {
    let cache = ReadCache::default();
    let kept_in_use = calendar(&["Kept in use"]);
    cache.read(&kept_in_use).unwrap();
    let first_other = calendar(&["Other 0"]);
    for n in 0..MAX_CACHED_TEXTS + 10 {
        let text = calendar(&[&format!("Other {n}")]);
        cache.read(&text).unwrap();
        if n % 100 == 0 {
            // Used again now and then: never the least recently used.
            cache.read(&kept_in_use).unwrap();
        }
    }
    let (texts, _) = cache.size();
    assert!(texts <= MAX_CACHED_TEXTS, "{texts} texts kept");
    assert!(texts >= MAX_CACHED_TEXTS * 3 / 4 - 10, "{texts} texts kept");
    let mut kept = cache.lock();
    let digest = |text: &str| -> [u8; 32] { Sha256::digest(text.as_bytes()).into() };
    assert!(kept.get(&digest(&kept_in_use)).is_some());
    assert!(kept.get(&digest(&first_other)).is_none());
}

#[test]
fn the_bytes_kept_are_bounded() {
    let mut kept = Kept::default();
    let read: ReadGroups = Ok(Arc::from(Vec::new()));
    let quarter = MAX_CACHED_BYTES / 4;
    for n in 0..10u8 {
        kept.insert([n; 32], read.clone(), quarter);
        assert!(
            kept.bytes <= MAX_CACHED_BYTES,
            "{} bytes after {n}",
            kept.bytes
        );
        let counted: usize = kept.by_digest.values().map(|entry| entry.bytes).sum();
        assert_eq!(counted, kept.bytes);
    }
    // The newest stay.
    assert!(kept.get(&[9; 32]).is_some());
    assert!(kept.get(&[0; 32]).is_none());
    // The same text kept twice counts once.
    let before = kept.bytes;
    kept.insert([9; 32], read, quarter);
    assert_eq!(kept.bytes, before);
}

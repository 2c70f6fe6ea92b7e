//! A stored text shown as one short line around the first word a search asked for: what
//! the notes' search and family memory's snippets both show.

/// Where in `chars` the first word (a run of letters and digits) that `wanted` accepts
/// starts, if any.
pub fn first_word_at(chars: &[char], wanted: impl Fn(&[char]) -> bool) -> Option<usize> {
    let mut at = 0;
    while at < chars.len() {
        if !chars[at].is_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len() && chars[at].is_alphanumeric() {
            at += 1;
        }
        if wanted(&chars[start..at]) {
            return Some(start);
        }
    }
    None
}

/// `chars[from..from + size]` (within the text) on one line, its spaces collapsed, with
/// `…` where text was left out before or after it.
pub fn window_line(chars: &[char], from: usize, size: usize) -> String {
    let from = from.min(chars.len());
    let to = (from + size).min(chars.len());
    let cut: String = chars[from..to].iter().collect();
    let mut line = cut.split_whitespace().collect::<Vec<_>>().join(" ");
    if from > 0 {
        line.insert(0, '…');
    }
    if to < chars.len() {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(text: &str) -> Vec<char> {
        text.chars().collect()
    }

    #[test]
    fn the_first_wanted_word_is_found_past_punctuation() {
        let text = chars("Hi, the Wifi: kartoffel-42");
        let find = |wanted: &str| {
            first_word_at(&text, |word: &[char]| {
                word.iter().collect::<String>() == wanted
            })
        };
        assert_eq!(find("Wifi"), Some(8));
        assert_eq!(find("42"), Some(24));
        assert_eq!(find("nothing"), None);
    }

    #[test]
    fn a_window_says_where_text_was_left_out() {
        let text = chars("one  two\nthree four");
        assert_eq!(window_line(&text, 0, 100), "one two three four");
        assert_eq!(window_line(&text, 5, 10), "…two three…");
        assert_eq!(window_line(&text, 50, 8), "…");
    }
}

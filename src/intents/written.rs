//! Numbers and dates as family members write them, read without guessing: what can be
//! read two ways, or only by assuming something the text does not say, is not read.
//!
//! A number is digits with at most one currency marker (a symbol such as `$` or `€`, or an
//! ISO 4217 code such as `EUR`, before or after it) and a sign. Between its digits:
//! - a space or an apostrophe separates thousands (`1 000`, `1'000`);
//! - a point or a comma written more than once separates thousands (`1.000.000`);
//! - with both a point and a comma, the last one, written once, is the decimal mark
//!   (`1,234.50`, `1.234,50`);
//! - a comma written once before exactly three digits separates thousands (`1,000` is a
//!   thousand, as in English); before any other count of digits it is a decimal comma
//!   (`12,50`);
//! - a point written once is a decimal point (`25.00`), except before exactly three
//!   digits after a number from 1 to 999: `1.000` is one in English and a thousand in much
//!   of Europe, and nothing says which, so it is not read.
//!
//! Thousands groups have three digits (the first one to three). Exponents (`1e3`), `NaN`,
//! `inf`, words, and numbers with more than 15 significant digits (more than a float holds
//! exactly) are not read either.
//!
//! A date is `YYYY-MM-DD` (or `YYYY/MM/DD`), a day with an English month name and a
//! four-digit year (`20 October 2025`, `Oct 20, 2025`, `20th Oct 2025`), or `today`,
//! `tomorrow`, `yesterday` in the profile's timezone. A date of numbers only that does not
//! start with the year (`03/04/2025`) is the 3rd of April or the 4th of March depending on
//! who wrote it, so it is not read.

use chrono::{Datelike, Days, NaiveDate};

/// Why a text is not read as a number.
#[derive(Debug, Clone, PartialEq)]
pub enum NumberProblem {
    NotANumber,
    /// A point before exactly three digits: `decimal` in English, `grouped` elsewhere.
    Ambiguous {
        decimal: f64,
        grouped: f64,
    },
    /// More significant digits than a float holds exactly.
    TooLong,
}

/// Why a text is not read as a date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateProblem {
    NotADate,
    /// Numbers only, day and month in an order the text does not say.
    Ambiguous,
}

/// Symbols stripped from an amount. Not `¢`: `30¢` is not 30.
const CURRENCY_SYMBOLS: &[char] = &[
    '$', '€', '£', '¥', '₹', '₽', '₩', '₺', '₪', '₴', '₦', '฿', '₱', '₫', '₣', '₵', '₸', '₼', '₾',
    '₡', '₲',
];

/// ISO 4217 codes, stripped from an amount when written in capitals.
const CURRENCY_CODES: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF \
    BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD \
    EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR \
    ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD \
    MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN \
    PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS \
    TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VES VND VUV WST XAF XCD XOF XPF YER ZAR ZMW \
    ZWL";

/// Codes also stripped written in any case (`30 eur`, `30 Eur`): none of them is an English
/// word, as `ALL`, `CUP`, `PEN` or `TOP` are.
const EVERYDAY_CODES: &[&str] = &[
    "usd", "eur", "gbp", "chf", "cad", "aud", "nzd", "jpy", "cny", "inr", "sek", "nok", "dkk",
    "pln", "czk", "huf",
];

/// The most significant digits read: an f64 holds every 15-digit decimal exactly.
const MAX_DIGITS: usize = 15;

fn is_currency_code(word: &str) -> bool {
    word.len() == 3
        && ((word.chars().all(|c| c.is_ascii_uppercase())
            && CURRENCY_CODES.split_whitespace().any(|code| code == word))
            || EVERYDAY_CODES.contains(&word.to_ascii_lowercase().as_str()))
}

/// `text` without one currency marker at its start, its sign taken out first (`-$5`):
/// (sign, rest, whether a marker was there).
fn strip_prefix_currency(text: &str) -> (Option<char>, &str, bool) {
    let (sign, text) = take_sign(text);
    if let Some(rest) = text.strip_prefix(CURRENCY_SYMBOLS) {
        return (sign, rest.trim_start(), true);
    }
    let letters: String = text.chars().take_while(char::is_ascii_alphabetic).collect();
    if is_currency_code(&letters) {
        return (sign, text[letters.len()..].trim_start(), true);
    }
    (sign, text, false)
}

fn strip_suffix_currency(text: &str) -> (&str, bool) {
    if let Some(rest) = text.strip_suffix(CURRENCY_SYMBOLS) {
        return (rest.trim_end(), true);
    }
    let letters = text
        .chars()
        .rev()
        .take_while(char::is_ascii_alphabetic)
        .count();
    let (rest, word) = text.split_at(text.len() - letters);
    if is_currency_code(word) {
        return (rest.trim_end(), true);
    }
    (text, false)
}

fn take_sign(text: &str) -> (Option<char>, &str) {
    match text.chars().next() {
        Some(sign @ ('-' | '+' | '−')) => (Some(sign), text[sign.len_utf8()..].trim_start()),
        _ => (None, text),
    }
}

/// A separator kind between digits: spaces (of any width) are one kind, apostrophes one.
fn separator_kind(c: char) -> Option<char> {
    match c {
        ',' | '.' => Some(c),
        ' ' | '\u{a0}' | '\u{202f}' | '\u{2009}' => Some(' '),
        '\'' | '\u{2019}' => Some('\''),
        _ => None,
    }
}

/// Thousands groups: the first of one to three digits, the others of three.
fn grouped(groups: &[&str]) -> Option<String> {
    let (first, rest) = groups.split_first()?;
    let valid = (1..=3).contains(&first.len()) && rest.iter().all(|group| group.len() == 3);
    valid.then(|| groups.concat())
}

/// `text` as a number, read as the module says.
pub fn read_number(text: &str) -> Result<f64, NumberProblem> {
    let text = text.trim();
    let (mut sign, text, prefixed) = strip_prefix_currency(text);
    let (text, suffixed) = strip_suffix_currency(text);
    if prefixed && suffixed {
        return Err(NumberProblem::NotANumber);
    }
    // `$-5`: the sign after a currency symbol.
    let text = if sign.is_none() {
        let (after, rest) = take_sign(text);
        sign = after;
        rest
    } else {
        text
    };
    let mut groups: Vec<&str> = Vec::new();
    let mut separators: Vec<char> = Vec::new();
    let mut start = 0;
    for (index, c) in text.char_indices() {
        if c.is_ascii_digit() {
            continue;
        }
        let kind = separator_kind(c).ok_or(NumberProblem::NotANumber)?;
        if index == start {
            // Nothing between two separators, or a separator first.
            return Err(NumberProblem::NotANumber);
        }
        groups.push(&text[start..index]);
        separators.push(kind);
        start = index + c.len_utf8();
    }
    if start == text.len() {
        // Empty, or a separator last.
        return Err(NumberProblem::NotANumber);
    }
    groups.push(&text[start..]);
    let (integer, fraction) = split_number(&groups, &separators)?;
    let significant = integer.trim_start_matches('0').len() + fraction.trim_end_matches('0').len();
    if significant > MAX_DIGITS {
        return Err(NumberProblem::TooLong);
    }
    let value = as_f64(&integer, &fraction)?;
    Ok(if matches!(sign, Some('-' | '−')) && value != 0.0 {
        -value
    } else {
        value
    })
}

fn as_f64(integer: &str, fraction: &str) -> Result<f64, NumberProblem> {
    let text = if fraction.is_empty() {
        integer.to_string()
    } else {
        format!("{integer}.{fraction}")
    };
    text.parse::<f64>()
        .ok()
        .filter(|value| value.is_finite())
        .ok_or(NumberProblem::NotANumber)
}

/// The integer and fraction digits of a number written as `groups` between `separators`.
fn split_number(groups: &[&str], separators: &[char]) -> Result<(String, String), NumberProblem> {
    let not_a_number = || NumberProblem::NotANumber;
    let Some(&last) = separators.last() else {
        return Ok((groups[0].to_string(), String::new()));
    };
    let mut kinds: Vec<char> = separators.to_vec();
    kinds.sort_unstable();
    kinds.dedup();
    match kinds.len() {
        1 => {
            let once = separators.len() == 1;
            if !matches!(last, ',' | '.') || !once {
                return Ok((grouped(groups).ok_or_else(not_a_number)?, String::new()));
            }
            let (integer, fraction) = (groups[0], groups[1]);
            let could_be_grouped = fraction.len() == 3
                && integer.len() <= 3
                && integer.chars().any(|digit| digit != '0');
            if !could_be_grouped {
                return Ok((integer.to_string(), fraction.to_string()));
            }
            if last == ',' {
                return Ok((format!("{integer}{fraction}"), String::new()));
            }
            Err(NumberProblem::Ambiguous {
                decimal: as_f64(integer, fraction)?,
                grouped: as_f64(&format!("{integer}{fraction}"), "")?,
            })
        }
        2 => {
            // The last separator, written once, is the decimal mark; the other groups.
            let decimal_once =
                matches!(last, ',' | '.') && separators.iter().filter(|&&c| c == last).count() == 1;
            if !decimal_once {
                return Err(not_a_number());
            }
            let (fraction, integer_groups) = groups.split_last().ok_or_else(not_a_number)?;
            Ok((
                grouped(integer_groups).ok_or_else(not_a_number)?,
                fraction.to_string(),
            ))
        }
        _ => Err(not_a_number()),
    }
}

/// `text` as a date, read as the module says; `today` in the profile's timezone.
pub fn read_date(text: &str, today: NaiveDate) -> Result<NaiveDate, DateProblem> {
    let text = text.trim();
    match text.to_lowercase().as_str() {
        "today" => return Ok(today),
        "tomorrow" => {
            return today
                .checked_add_days(Days::new(1))
                .ok_or(DateProblem::NotADate);
        }
        "yesterday" => {
            return today
                .checked_sub_days(Days::new(1))
                .ok_or(DateProblem::NotADate);
        }
        _ => {}
    }
    let numbers_only = text
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '-' | '/' | '.'));
    if numbers_only {
        let year_first = text
            .split(['-', '/', '.'])
            .next()
            .is_some_and(|year| year.len() == 4);
        if !year_first {
            return Err(if text.chars().any(|c| c.is_ascii_digit()) {
                DateProblem::Ambiguous
            } else {
                DateProblem::NotADate
            });
        }
        return ["%Y-%m-%d", "%Y/%m/%d"]
            .iter()
            .find_map(|format| NaiveDate::parse_from_str(text, format).ok())
            .filter(four_digit_year)
            .ok_or(DateProblem::NotADate);
    }
    // `20th Oct, 2025` → `20 Oct 2025`.
    let words: Vec<String> = text
        .replace(',', " ")
        .split_whitespace()
        .map(|word| {
            let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            let suffix = &word[digits.len()..].to_lowercase();
            let ordinal = !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit())
                && matches!(suffix.as_str(), "st" | "nd" | "rd" | "th");
            if ordinal { digits } else { word }.to_string()
        })
        .collect();
    let plain = words.join(" ");
    ["%d %B %Y", "%B %d %Y"]
        .iter()
        .find_map(|format| NaiveDate::parse_from_str(&plain, format).ok())
        .filter(four_digit_year)
        .ok_or(DateProblem::NotADate)
}

/// `25` read as a `%Y` is the year 25: a year is written with four digits.
fn four_digit_year(date: &NaiveDate) -> bool {
    (1000..=9999).contains(&date.year())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_as_members_write_them() {
        for (written, number) in [
            ("1,000", 1000.0),
            ("1 000", 1000.0),
            ("1\u{a0}000", 1000.0),
            ("1'000", 1000.0),
            ("25.00", 25.0),
            ("25", 25.0),
            ("$30", 30.0),
            ("30$", 30.0),
            ("$ 30", 30.0),
            ("30 EUR", 30.0),
            ("EUR 30", 30.0),
            ("30EUR", 30.0),
            ("30 eur", 30.0),
            ("30 Eur", 30.0),
            ("usd 30", 30.0),
            ("€12,50", 12.5),
            ("12,5", 12.5),
            ("-5", -5.0),
            ("−5", -5.0),
            ("-$5", -5.0),
            ("$-5", -5.0),
            ("+7", 7.0),
            ("-0", 0.0),
            ("0.125", 0.125),
            ("0,500", 0.5),
            ("1000.000", 1000.0),
            ("1,000,000", 1_000_000.0),
            ("1.000.000", 1_000_000.0),
            ("1,234.56", 1234.56),
            ("1.234,56", 1234.56),
            ("1 234,56", 1234.56),
            ("1'234.50", 1234.5),
            ("007", 7.0),
            ("  42  ", 42.0),
            ("999999999999999", 999_999_999_999_999.0),
        ] {
            assert_eq!(read_number(written), Ok(number), "{written:?}");
        }
    }

    #[test]
    fn what_cannot_be_read_one_way_only_is_not_a_number() {
        for written in [
            "",
            " ",
            "1e3",
            "1E3",
            "NaN",
            "nan",
            "inf",
            "-inf",
            "infinity",
            "five",
            "0x10",
            "1,00,000",
            "10 00",
            "1,000,5",
            "1,2.3",
            "1.2.3,4,5",
            "1.000,000.5",
            ".5",
            "5.",
            ",5",
            "1..0",
            "1,,000",
            "$$30",
            "$30 EUR",
            "30 min",
            "30 all",
            "3 cup",
            "3 Cup",
            "30 Top",
            "30¢",
            "30 euros",
            "1-2",
            "--5",
            "5-",
            "1_000",
            "١٢",
        ] {
            assert_eq!(
                read_number(written),
                Err(NumberProblem::NotANumber),
                "{written:?}"
            );
        }
        for (written, decimal, grouped) in [
            ("1.000", 1.0, 1000.0),
            ("2.500", 2.5, 2500.0),
            ("$999.999", 999.999, 999_999.0),
        ] {
            assert_eq!(
                read_number(written),
                Err(NumberProblem::Ambiguous { decimal, grouped }),
                "{written:?}"
            );
        }
        assert_eq!(read_number("1234567890123456"), Err(NumberProblem::TooLong));
        assert_eq!(
            read_number("0.1234567890123456"),
            Err(NumberProblem::TooLong)
        );
    }

    #[test]
    fn dates_are_read_when_the_day_is_plain() {
        let today = NaiveDate::from_ymd_opt(2025, 10, 20).unwrap();
        let day = |y, m, d| Ok(NaiveDate::from_ymd_opt(y, m, d).unwrap());
        for (written, date) in [
            ("2025-10-20", day(2025, 10, 20)),
            ("2025/1/5", day(2025, 1, 5)),
            ("20 October 2025", day(2025, 10, 20)),
            ("20 Oct 2025", day(2025, 10, 20)),
            ("October 20, 2025", day(2025, 10, 20)),
            ("oct 20 2025", day(2025, 10, 20)),
            ("20th October 2025", day(2025, 10, 20)),
            ("1st Jan 2026", day(2026, 1, 1)),
            ("today", day(2025, 10, 20)),
            ("Tomorrow", day(2025, 10, 21)),
            ("yesterday", day(2025, 10, 19)),
        ] {
            assert_eq!(read_date(written, today), date, "{written:?}");
        }
        for written in ["03/04/2025", "20/10/2025", "10-20-2025", "20.10.2025"] {
            assert_eq!(
                read_date(written, today),
                Err(DateProblem::Ambiguous),
                "{written:?}"
            );
        }
        for written in [
            "",
            "2025-13-01",
            "2025-02-30",
            "20 Oct 25",
            "20 October",
            "next week",
            "Oct",
            "20 Octember 2025",
            "2025",
            "--",
        ] {
            assert_eq!(
                read_date(written, today),
                Err(DateProblem::NotADate),
                "{written:?}"
            );
        }
    }
}

//! What hearth never shows of a value it prints: the password in a URL, alone or within a
//! text (a script's error output on the family page). A database url set
//! through the environment may carry one, and it must reach no log line, error, `Debug`
//! output or `/readyz` detail; configuration, storage errors and readiness all print urls
//! through this.

/// The URL with the password of `user:password@` and of a `password=` query parameter
/// replaced by `***`.
pub fn redact_url_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            format!("{user}:***@{host}")
        }
        _ => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if name.eq_ignore_ascii_case("password") => {
                        format!("{name}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// `text` with the password of every url in it replaced by `***` (a url: a word holding
/// `://`); what a script wrote, or a value it was given, shown on a page.
pub fn redact_urls_in(text: &str) -> String {
    if !text.contains("://") {
        return text.to_owned();
    }
    let mut shown = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, shown: &mut String| {
        if word.contains("://") {
            shown.push_str(&redact_url_password(word));
        } else {
            shown.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() || c == '"' || c == '\'' || c == '<' || c == '>' {
            flush(&mut word, &mut shown);
            shown.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut shown);
    shown
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_within_a_text_lose_their_passwords_and_the_rest_stays() {
        assert_eq!(
            super::redact_urls_in("failed: postgres://app:hunter2@db/x refused\nok"),
            "failed: postgres://app:***@db/x refused\nok"
        );
        assert_eq!(super::redact_urls_in("no url here"), "no url here");
    }

    use super::*;

    #[test]
    fn url_passwords_are_redacted_and_the_rest_kept() {
        assert_eq!(
            redact_url_password("postgres://hearth:s3cret@db:5432/hearth?sslmode=require"),
            "postgres://hearth:***@db:5432/hearth?sslmode=require"
        );
        assert_eq!(
            redact_url_password("postgres://db/hearth?user=h&password=s3cret"),
            "postgres://db/hearth?user=h&password=***"
        );
        assert_eq!(
            redact_url_password("postgres://hearth@db/hearth"),
            "postgres://hearth@db/hearth"
        );
        assert_eq!(
            redact_url_password("sqlite://data/hearth.db"),
            "sqlite://data/hearth.db"
        );
        assert_eq!(redact_url_password("sqlite::memory:"), "sqlite::memory:");
    }
}

//! What hearth never shows of a value it prints: the password in a URL. A database url set
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

#[cfg(test)]
mod tests {
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

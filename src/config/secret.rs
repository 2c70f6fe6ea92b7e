//! A secret read from the environment, carried inside the configuration without ever being
//! printed.
//!
//! The configuration is logged and shown in test failures with `Debug`; a secret inside it
//! prints as `***`, and it has no `Display`, so the only way to its text is [`Secret::expose`]
//! at the place that hands it over (a child's environment, a request header).

use std::fmt;

/// The value of an environment variable that a `*_env` key names.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret's text, for the one place that passes it on.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Secret(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret:?}"), "Secret(***)");
        assert_eq!(
            format!("{:#?}", Some(&secret)),
            "Some(\n    Secret(***),\n)"
        );
        assert_eq!(secret.expose(), "hunter2");
    }
}

//! Why a configuration was refused: the error type of loading, and the one-problem-per-line
//! report that validation produces.
//!
//! Every message names the file, the key path inside it and what is wrong with the value, so
//! the person reading the start-up failure can go straight to the line to fix.

use std::fmt;
use std::path::PathBuf;

/// One thing wrong with the configuration, at one key path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConfigProblem {
    /// Where the problem is, e.g. `service_profiles[1].processing_config.llm_model`.
    pub key_path: String,
    /// What is wrong, in lowercase, naming the offending value.
    pub message: String,
}

impl ConfigProblem {
    pub(crate) fn new(key_path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key_path: key_path.into(),
            message: message.into(),
        }
    }
}

/// The problems found by validation, kept in the order they were found.
///
/// The same problem can be reached from several profiles (a bad value in the defaults is
/// inherited by each); it is reported once, at the key where it is written.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    found: Vec<ConfigProblem>,
}

impl Problems {
    pub(crate) fn push(&mut self, key_path: impl Into<String>, message: impl Into<String>) {
        let problem = ConfigProblem::new(key_path, message);
        if !self.found.contains(&problem) {
            self.found.push(problem);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    pub(crate) fn into_vec(self) -> Vec<ConfigProblem> {
        self.found
    }
}

/// A configuration that cannot be used; the program must not start with it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file is missing or unreadable.
    #[error("{}: cannot read the configuration file: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The file is not valid YAML, or not a mapping of keys at the top. The message carries
    /// the parser's own "at line L column C" when it has one.
    #[error("{}: invalid yaml: {message}", file.display())]
    Syntax {
        file: PathBuf,
        /// 1-based line of the problem, when the YAML parser knows it.
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },

    /// An environment override could not be applied on top of the file.
    #[error("{}: cannot apply the HEARTH__* environment overrides: {message}", file.display())]
    Environment { file: PathBuf, message: String },

    /// The configuration cannot be used: keys unknown, mistyped or missing (the shape is
    /// checked first, and stops loading), or values that cannot work together (checked once
    /// the shape is right); every problem found, one per line.
    #[error("{}", ProblemLines { file, problems })]
    Invalid {
        file: PathBuf,
        problems: Vec<ConfigProblem>,
    },
}

impl ConfigError {
    /// Every problem at a key path that this error reports; none for the errors that concern
    /// the whole file (unreadable, not YAML).
    pub fn problems(&self) -> &[ConfigProblem] {
        match self {
            Self::Invalid { problems, .. } => problems,
            Self::Read { .. } | Self::Syntax { .. } | Self::Environment { .. } => &[],
        }
    }
}

struct ProblemLines<'a> {
    file: &'a PathBuf,
    problems: &'a [ConfigProblem],
}

impl fmt::Display for ProblemLines<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, problem) in self.problems.iter().enumerate() {
            if index > 0 {
                formatter.write_str("\n")?;
            }
            write!(
                formatter,
                "{}: {}: {}",
                self.file.display(),
                problem.key_path,
                problem.message
            )?;
        }
        Ok(())
    }
}

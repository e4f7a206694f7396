//! The crate's one error type.

/// What the parameter tree refuses: a bad pattern or name, a name taken or no room, nothing
/// matching, a read-only parameter, a value too long or refused by its setter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// A glob that is empty, too long, or can never match anything.
    #[error("invalid pattern {pattern:?}: {reason}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A parameter name that cannot be registered (empty segment, glob character, too long).
    #[error("invalid parameter name {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A name registered twice; the first registration stays.
    #[error("parameter {name} is already registered")]
    AlreadyRegistered {
        /// The name.
        name: String,
    },
    /// The tree already holds its maximum number of parameters.
    #[error(
        "cannot register {name}: the tree already holds the maximum of {params_max} parameters"
    )]
    TreeFull {
        /// The name that did not fit.
        name: String,
        /// The configured maximum.
        params_max: usize,
    },
    /// No registered parameter matches the pattern.
    #[error("no parameter matches {pattern}")]
    NoMatch {
        /// The pattern as given.
        pattern: String,
    },
    /// A set that reached a parameter without a setter; nothing was set.
    #[error("parameter {name} is read-only")]
    ReadOnly {
        /// The read-only parameter.
        name: String,
    },
    /// A value longer than any setter accepts; nothing was set.
    #[error("value for {pattern} is {len_bytes} bytes, more than the maximum of {len_max_bytes}")]
    ValueTooLong {
        /// The pattern the value was for.
        pattern: String,
        /// The value's length.
        len_bytes: usize,
        /// The maximum.
        len_max_bytes: usize,
    },
    /// A setter refused the value; the parameter keeps its old value.
    #[error(
        "{name}: cannot set {value:?}: {reason}{}",
        already_set_note(already_set)
    )]
    Rejected {
        /// The parameter whose setter refused.
        name: String,
        /// The value it refused.
        value: String,
        /// The setter's reason.
        reason: String,
        /// Parameters matched by the same pattern that were set before this one refused.
        already_set: Vec<String>,
    },
}

/// Names already set before a refusal, so a partial set is never silent.
fn already_set_note(already_set: &[String]) -> String {
    if already_set.is_empty() {
        String::new()
    } else {
        format!(" (already set: {})", already_set.join(", "))
    }
}

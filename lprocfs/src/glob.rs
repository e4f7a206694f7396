//! lctl-style globs over dotted parameter names, and the same fnmatch(3) over one name whose
//! dots are characters like any other ([`NamePattern`]: `lfs find -name`). One matcher serves
//! both, so the two commands mean the same by `*`, `?` and `[...]`.
//!
//! `lctl get_param fabric.*.credits` turns the dots into slashes and hands `fabric/*/credits` to
//! glob(3), so a wildcard never reaches across a dot. [`Glob`] matches the same way without a
//! file system: the pattern and the name are split at dots, must have the same number of
//! segments, and each segment is matched by fnmatch(3) rules:
//!
//! | pattern        | matches one segment that is …                              |
//! |----------------|------------------------------------------------------------|
//! | `*`            | any run of characters, possibly empty                      |
//! | `?`            | exactly one character                                      |
//! | `[abc]`, `[a-z]` | one character from the set (ranges are inclusive)        |
//! | `[!abc]`, `[^abc]` | one character not in the set                           |
//! | `\x`           | the character `x` itself                                   |
//!
//! A `]` right after `[` (or `[!`) is a member of the set, as in fnmatch. Patterns that could
//! never match anything — an empty segment, an unclosed `[`, a set or escape naming a dot —
//! are refused with a reason instead of silently matching nothing.

use crate::error::ParamError;

/// The longest pattern accepted, in bytes; parameter names are far shorter.
pub const PATTERN_LEN_MAX: usize = 1024;

/// A parsed glob: one list of tokens per dot-separated segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    /// The pattern as written, for error messages.
    text: String,
    /// One token list per segment; never empty, and no segment is empty.
    segments: Vec<Vec<Token>>,
}

/// One element of a segment pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    /// This character.
    Literal(char),
    /// `?`: any one character.
    AnyOne,
    /// `*`: any run of characters.
    AnyRun,
    /// `[...]`: one character in (or, when `negated`, not in) the inclusive ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Token {
    /// Whether this single-character token accepts `c`. `AnyRun` is handled by the matcher.
    fn accepts(&self, c: char) -> bool {
        match self {
            Token::Literal(l) => *l == c,
            Token::AnyOne => true,
            Token::AnyRun => false,
            Token::Class { negated, ranges } => {
                ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
            }
        }
    }
}

impl Glob {
    /// Parses `pattern`, refusing ones that are empty, too long, or malformed.
    pub fn parse(pattern: &str) -> Result<Glob, ParamError> {
        let segments = tokens(pattern, Dots::Split)?;
        if segments.iter().any(Vec::is_empty) {
            return Err(invalid(
                pattern,
                "it has an empty segment (a leading, trailing or doubled dot)",
            ));
        }
        Ok(Glob {
            text: pattern.to_owned(),
            segments,
        })
    }

    /// The pattern as it was written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The one name this pattern can match, if it has no wildcards (escapes resolved).
    pub fn literal(&self) -> Option<String> {
        let mut name = String::new();
        for (i, segment) in self.segments.iter().enumerate() {
            if i > 0 {
                name.push('.');
            }
            for token in segment {
                match token {
                    Token::Literal(c) => name.push(*c),
                    _ => return None,
                }
            }
        }
        Some(name)
    }

    /// Whether `name` matches the whole pattern, segment for segment.
    pub fn matches(&self, name: &str) -> bool {
        let mut parts = name.split('.');
        let all_match = self.segments.iter().all(|segment| {
            parts
                .next()
                .is_some_and(|part| segment_matches(segment, part))
        });
        all_match && parts.next().is_none()
    }

    /// Whether `name` lies below something the pattern matches: its first segments match the
    /// whole pattern and at least one more follows. This is `lctl list_param -R` descending
    /// into a matched directory.
    pub fn matches_below(&self, name: &str) -> bool {
        let mut parts = name.split('.');
        let all_match = self.segments.iter().all(|segment| {
            parts
                .next()
                .is_some_and(|part| segment_matches(segment, part))
        });
        all_match && parts.next().is_some()
    }
}

/// What a dot is in a pattern.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dots {
    /// A separator: names split at dots and wildcards never cross one (parameter names).
    Split,
    /// A character like any other (a file name).
    Literal,
}

/// The error for `pattern`, refused for `reason`.
fn invalid(pattern: &str, reason: &str) -> ParamError {
    ParamError::InvalidPattern {
        pattern: pattern.to_owned(),
        reason: reason.to_owned(),
    }
}

/// `pattern`'s tokens, one list per dot-separated segment (one list in all with
/// [`Dots::Literal`]); refuses an empty, too long or malformed pattern.
fn tokens(pattern: &str, dots: Dots) -> Result<Vec<Vec<Token>>, ParamError> {
    let invalid = |reason: &str| invalid(pattern, reason);
    if pattern.is_empty() {
        return Err(invalid("it is empty"));
    }
    if pattern.len() > PATTERN_LEN_MAX {
        return Err(invalid(&format!(
            "it is longer than {PATTERN_LEN_MAX} bytes"
        )));
    }
    let mut segments = vec![Vec::new()];
    let mut chars = pattern.chars();
    // Each pass consumes at least one character, so this ends within pattern.len() passes.
    while let Some(c) = chars.next() {
        let token = match c {
            '.' if dots == Dots::Split => {
                segments.push(Vec::new());
                continue;
            }
            '*' => Token::AnyRun,
            '?' => Token::AnyOne,
            '\\' => match chars.next() {
                None => return Err(invalid("it ends in a lone '\\'")),
                Some('.') if dots == Dots::Split => {
                    return Err(invalid("'\\.' can never match: names split at dots"));
                }
                Some(escaped) => Token::Literal(escaped),
            },
            '[' => parse_class(&mut chars, dots).map_err(invalid)?,
            other => Token::Literal(other),
        };
        let segment = segments.last_mut().expect("segments starts non-empty");
        // `**` means the same as `*`; keeping one keeps the matcher's backtracking small.
        if !(token == Token::AnyRun && segment.last() == Some(&Token::AnyRun)) {
            segment.push(token);
        }
    }
    Ok(segments)
}

/// fnmatch(3) over a whole name, a dot a character like any other: `lfs find -name`'s
/// pattern (`*.dat` matches `a.dat` and `.dat`; `*` matches a name with dots in it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamePattern {
    /// The pattern as written, for error messages.
    text: String,
    tokens: Vec<Token>,
}

impl NamePattern {
    /// Parses `pattern`, refusing ones that are empty, too long, or malformed.
    pub fn parse(pattern: &str) -> Result<NamePattern, ParamError> {
        let mut segments = tokens(pattern, Dots::Literal)?;
        Ok(NamePattern {
            text: pattern.to_owned(),
            tokens: segments.pop().expect("one segment when dots are literal"),
        })
    }

    /// The pattern as it was written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        segment_matches(&self.tokens, name)
    }
}

/// Parses the rest of a `[...]` set, after its `[`.
fn parse_class(chars: &mut std::str::Chars<'_>, dots: Dots) -> Result<Token, &'static str> {
    const UNCLOSED: &str = "it has a '[' without its ']'";
    let mut negated = false;
    let mut ranges = Vec::new();
    let mut first = true;
    // Each pass consumes at least one character, so this ends with the pattern.
    loop {
        let mut c = chars.next().ok_or(UNCLOSED)?;
        if first && !negated && (c == '!' || c == '^') {
            negated = true;
            continue;
        }
        if c == ']' && !first {
            break;
        }
        first = false;
        if c == '\\' {
            c = chars.next().ok_or(UNCLOSED)?;
        }
        // A '-' between two members makes a range; before the closing ']' it is a member.
        let mut lookahead = chars.clone();
        let hi = match (lookahead.next(), lookahead.next()) {
            (Some('-'), Some(hi)) if hi != ']' => {
                chars.next();
                chars.next();
                if hi == '\\' {
                    chars.next().ok_or(UNCLOSED)?
                } else {
                    hi
                }
            }
            _ => c,
        };
        if dots == Dots::Split && !negated && c <= '.' && '.' <= hi {
            return Err("a '[...]' set can never match a dot: names split at dots");
        }
        if hi < c {
            return Err("a '[...]' set has a range whose end comes before its start");
        }
        ranges.push((c, hi));
    }
    if ranges.is_empty() {
        return Err(UNCLOSED);
    }
    Ok(Token::Class { negated, ranges })
}

/// fnmatch(3) of one segment: `*` takes any run, every other token exactly one character.
///
/// The classic single-backtrack matcher: on a mismatch, go back to the last `*` and let it
/// swallow one more character. Later stars never need earlier ones to be revisited, so the
/// work is at most `tokens.len() * text.len()` steps.
fn segment_matches(tokens: &[Token], text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let (mut t, mut s) = (0, 0);
    // (token index just after the last `*`, text index that `*` has swallowed up to)
    let mut star: Option<(usize, usize)> = None;
    while s < text.len() {
        match tokens.get(t) {
            Some(Token::AnyRun) => {
                star = Some((t + 1, s));
                t += 1;
                continue;
            }
            Some(token) if token.accepts(text[s]) => {
                t += 1;
                s += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((after_star, swallowed)) => {
                star = Some((after_star, swallowed + 1));
                t = after_star;
                s = swallowed + 1;
            }
            None => return false,
        }
    }
    tokens[t..].iter().all(|token| *token == Token::AnyRun)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name pattern is the same fnmatch with its dots as characters: what `*`, `?` and sets
    /// mean does not change, and nothing splits.
    #[test]
    fn a_name_pattern_matches_whole_names_dots_and_all() {
        for (pattern, name, expected) in [
            ("*.dat", "a.dat", true),
            ("*.dat", ".dat", true),
            ("*.dat", "a.dat.bak", false),
            ("*", "a.b.c", true),
            ("*", ".hidden", true),
            ("a?b", "a.b", true),
            ("f[0-9].*", "f7.txt", true),
            ("f[0-9].*", "fx.txt", false),
            ("[.]x", ".x", true),
            ("[!.]x", ".x", false),
            ("a\\.b", "a.b", true),
            ("a\\*", "a*", true),
            ("a\\*", "ab", false),
            ("data", "data", true),
            ("data", "data2", false),
        ] {
            let parsed = NamePattern::parse(pattern).unwrap();
            assert_eq!(parsed.matches(name), expected, "{pattern} against {name}");
            assert_eq!(parsed.as_str(), pattern);
        }
        for bad in ["", "[ab", "a\\", "[z-a]"] {
            assert!(NamePattern::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    /// (pattern, name, matches)
    const TABLE: &[(&str, &str, bool)] = &[
        // Literals.
        ("fabric.tcp0.credits", "fabric.tcp0.credits", true),
        ("fabric.tcp0.credits", "fabric.tcp0.credit", false),
        ("fabric.tcp0.credits", "fabric.tcp0.credits2", false),
        ("fabric.tcp0", "fabric.tcp0.credits", false),
        ("fabric.tcp0.credits.x", "fabric.tcp0.credits", false),
        // `*` within one segment.
        ("fabric.*.credits", "fabric.tcp0.credits", true),
        ("fabric.*.credits", "fabric.mem0.credits", true),
        ("fabric.*.credits", "fabric.tcp0.peer_credits", false),
        ("fabric.*", "fabric.tcp0.credits", false),
        ("*", "fabric", true),
        ("*", "fabric.tcp0", false),
        ("*.*.*", "fabric.tcp0.credits", true),
        ("*.*", "fabric.tcp0.credits", false),
        ("fabric.*credits", "fabric.peer_credits", true),
        ("fabric.*credits", "fabric.credits", true),
        ("fabric.*_credits", "fabric.credits", false),
        ("fabric.peer*", "fabric.peer", true),
        ("fabric.peer*", "fabric.peer_credits", true),
        ("fabric.p*r*s", "fabric.peer_credits", true),
        ("fabric.p*r*s", "fabric.peer_credit", false),
        ("fabric.**", "fabric.anything", true),
        ("fabric.*a*a*a", "fabric.aaaa", true),
        ("fabric.*a*a*a", "fabric.aa", false),
        ("fabric.*ab", "fabric.aab", true),
        ("fabric.*ab", "fabric.aba", false),
        // `*` never crosses a dot, even at the ends.
        ("fabric*", "fabric.tcp0", false),
        ("*credits", "fabric.credits", false),
        (
            "obdfilter.*.sync_journal",
            "obdfilter.OST0000.sync_journal",
            true,
        ),
        (
            "obdfilter.*.sync_journal",
            "obdfilter.a.b.sync_journal",
            false,
        ),
        // `?`.
        ("fabric.tcp?.credits", "fabric.tcp0.credits", true),
        ("fabric.tcp?.credits", "fabric.tcp.credits", false),
        ("fabric.tcp?.credits", "fabric.tcp10.credits", false),
        ("fabric.tcp??.credits", "fabric.tcp10.credits", true),
        ("fabric.?", "fabric.é", true),
        ("a?b", "a.b", false),
        // `[...]` sets, ranges, negation.
        ("fabric.tcp[01].credits", "fabric.tcp0.credits", true),
        ("fabric.tcp[01].credits", "fabric.tcp1.credits", true),
        ("fabric.tcp[01].credits", "fabric.tcp2.credits", false),
        ("fabric.tcp[0-9].credits", "fabric.tcp7.credits", true),
        ("fabric.tcp[0-9].credits", "fabric.tcpx.credits", false),
        ("fabric.[a-cx-z]", "fabric.b", true),
        ("fabric.[a-cx-z]", "fabric.y", true),
        ("fabric.[a-cx-z]", "fabric.m", false),
        ("fabric.tcp[!0].credits", "fabric.tcp1.credits", true),
        ("fabric.tcp[!0].credits", "fabric.tcp0.credits", false),
        ("fabric.tcp[^0].credits", "fabric.tcp0.credits", false),
        ("fabric.[]]", "fabric.]", true),
        ("fabric.[!]]", "fabric.]", false),
        ("fabric.[!]]", "fabric.x", true),
        ("fabric.[a-]", "fabric.-", true),
        ("fabric.[a-]", "fabric.a", true),
        ("fabric.[a-]", "fabric.b", false),
        ("fabric.[!a]", "fabric.", false),
        ("fabric.[!.]", "fabric.x", true),
        ("fabric.x[*]", "fabric.x*", true),
        ("fabric.x[*]", "fabric.xy", false),
        ("fabric.[\\]]", "fabric.]", true),
        ("OST000[0-3].*", "OST0002.stats", true),
        // Escapes.
        ("fabric.\\*", "fabric.*", true),
        ("fabric.\\*", "fabric.x", false),
        ("fabric.a\\?", "fabric.a?", true),
        ("fabric.a\\?", "fabric.ab", false),
        // Names with odd but legal characters.
        ("peers.*", "peers.127_0_0_1:7001@tcp0", true),
        ("peers.*@tcp0", "peers.127_0_0_1:7001@tcp0", true),
        ("peers.*@mem0", "peers.127_0_0_1:7001@tcp0", false),
    ];

    #[test]
    fn table() {
        for &(pattern, name, expected) in TABLE {
            let glob = Glob::parse(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
            assert_eq!(
                glob.matches(name),
                expected,
                "pattern {pattern:?} name {name:?}"
            );
        }
    }

    #[test]
    fn malformed_patterns_are_refused_with_a_reason() {
        let table: &[(&str, &str)] = &[
            ("", "empty"),
            (".", "empty segment"),
            ("fabric.", "empty segment"),
            (".fabric", "empty segment"),
            ("fabric..credits", "empty segment"),
            ("fabric.tcp[0", "without its ']'"),
            ("fabric.tcp[", "without its ']'"),
            ("fabric.tcp[!", "without its ']'"),
            ("fabric.[]", "without its ']'"),
            ("fabric.[\\", "without its ']'"),
            ("fabric\\", "lone"),
            ("fabric\\.tcp0", "'\\.'"),
            ("fabric[.]", "dot"),
            ("fabric[+-/]", "dot"),
            ("fabric[a.]", "dot"),
            ("fabric[z-a]", "before its start"),
        ];
        for &(pattern, reason) in table {
            match Glob::parse(pattern) {
                Err(ParamError::InvalidPattern {
                    pattern: p,
                    reason: r,
                }) => {
                    assert_eq!(p, pattern);
                    assert!(
                        r.contains(reason),
                        "{pattern:?}: reason {r:?} lacks {reason:?}"
                    );
                }
                other => panic!("{pattern:?} gave {other:?}"),
            }
        }
        let long = "a".repeat(PATTERN_LEN_MAX + 1);
        assert!(Glob::parse(&long).is_err());
        assert!(Glob::parse(&"a".repeat(PATTERN_LEN_MAX)).is_ok());
    }

    #[test]
    fn literal_is_only_for_patterns_without_wildcards() {
        let table: &[(&str, Option<&str>)] = &[
            ("fabric.tcp0.credits", Some("fabric.tcp0.credits")),
            ("fabric.\\*", Some("fabric.*")),
            ("fabric.*", None),
            ("fabric.tcp?", None),
            ("fabric.tcp[0]", None),
        ];
        for &(pattern, literal) in table {
            let glob = Glob::parse(pattern).unwrap();
            assert_eq!(glob.literal().as_deref(), literal, "{pattern:?}");
            assert_eq!(glob.as_str(), pattern);
        }
    }

    #[test]
    fn matches_below_descends_into_matched_directories() {
        let table: &[(&str, &str, bool)] = &[
            ("fabric", "fabric.tcp0.credits", true),
            ("fabric", "fabric", false),
            ("fabric", "fabricx.tcp0", false),
            ("*", "fabric.tcp0.credits", true),
            ("fabric.*", "fabric.tcp0.credits", true),
            ("fabric.tcp0.credits", "fabric.tcp0.credits", false),
            ("fabric.mem*", "fabric.tcp0.credits", false),
        ];
        for &(pattern, name, expected) in table {
            let glob = Glob::parse(pattern).unwrap();
            assert_eq!(glob.matches_below(name), expected, "{pattern:?} {name:?}");
        }
    }

    /// Every pattern built from a small alphabet against every short name, checked against a
    /// plainly recursive reference matcher.
    #[test]
    fn agrees_with_a_recursive_reference_on_every_short_case() {
        fn reference(p: &[char], s: &[char]) -> bool {
            match p.split_first() {
                None => s.is_empty(),
                Some(('*', rest)) => {
                    (0..=s.len()).any(|k| !s[..k].contains(&'.') && reference(rest, &s[k..]))
                }
                Some(('?', rest)) => {
                    s.first().is_some_and(|&c| c != '.') && reference(rest, &s[1..])
                }
                Some((&c, rest)) => s.first() == Some(&c) && reference(rest, &s[1..]),
            }
        }
        let words = |alphabet: &[char], len_max: usize| {
            let mut all = vec![String::new()];
            let mut frontier = vec![String::new()];
            for _ in 0..len_max {
                frontier = frontier
                    .iter()
                    .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                    .collect();
                all.extend(frontier.iter().cloned());
            }
            all
        };
        let patterns = words(&['a', 'b', '*', '?', '.'], 4);
        let names = words(&['a', 'b', '.'], 5);
        let mut checked = 0;
        for pattern in &patterns {
            let Ok(glob) = Glob::parse(pattern) else {
                continue;
            };
            let p: Vec<char> = pattern.chars().collect();
            for name in &names {
                let n: Vec<char> = name.chars().collect();
                assert_eq!(
                    glob.matches(name),
                    reference(&p, &n),
                    "{pattern:?} {name:?}"
                );
                checked += 1;
            }
        }
        assert!(checked > 10_000, "only {checked} cases");
    }
}

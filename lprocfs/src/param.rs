//! One parameter: how to read it and, if it is writable, how to set it.
//!
//! Getters and setters are plain closures over whatever the component shares: an atomic, a
//! `Mutex`, a `Weak` to its state. They run on the admin service's task, so they must be quick
//! and must not block. A getter that holds an `Arc` to its component keeps that component
//! alive while registered; capture the shared field itself or a `Weak` instead.

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Reads a parameter's current value. Multi-line values (tables, like lctl's `peers`) are fine.
pub type Getter = Arc<dyn Fn() -> String + Send + Sync>;

/// Applies a new value, or says in words why it cannot; on `Err` the old value must stay.
pub type Setter = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// A parameter's behaviour, registered under a name in a [`ParamTree`](crate::ParamTree).
#[derive(Clone)]
pub struct Param {
    /// Reads the value.
    getter: Getter,
    /// Sets the value; `None` for read-only parameters.
    setter: Option<Setter>,
}

impl Param {
    /// A read-only parameter whose value `get` computes on each read.
    pub fn read_only(get: impl Fn() -> String + Send + Sync + 'static) -> Param {
        Param {
            getter: Arc::new(get),
            setter: None,
        }
    }

    /// A writable parameter: `get` reads it, `set` parses and applies a new value.
    pub fn read_write(
        get: impl Fn() -> String + Send + Sync + 'static,
        set: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static,
    ) -> Param {
        Param {
            getter: Arc::new(get),
            setter: Some(Arc::new(set)),
        }
    }

    /// A read-only counter (a statistic): the decimal value of `counter`.
    pub fn counter(counter: Arc<AtomicU64>) -> Param {
        // Relaxed: each counter is read on its own; no other memory is published through it.
        Param::read_only(move || counter.load(Ordering::Relaxed).to_string())
    }

    /// A writable unsigned tunable that accepts decimal values within `allowed`.
    pub fn u64(value: Arc<AtomicU64>, allowed: RangeInclusive<u64>) -> Param {
        let reader = Arc::clone(&value);
        Param::read_write(
            move || reader.load(Ordering::Relaxed).to_string(),
            move |text| {
                let parsed: u64 = text
                    .trim()
                    .parse()
                    .map_err(|_| format!("{text:?} is not an unsigned integer"))?;
                if !allowed.contains(&parsed) {
                    return Err(format!(
                        "{parsed} is outside {}..={}",
                        allowed.start(),
                        allowed.end()
                    ));
                }
                value.store(parsed, Ordering::Relaxed);
                Ok(())
            },
        )
    }

    /// A writable on/off flag, shown and set as `0` or `1` as lctl does.
    pub fn flag(flag: Arc<AtomicBool>) -> Param {
        let reader = Arc::clone(&flag);
        Param::read_write(
            move || u8::from(reader.load(Ordering::Relaxed)).to_string(),
            move |text| {
                let on = match text.trim() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("{text:?} is not 0 or 1")),
                };
                flag.store(on, Ordering::Relaxed);
                Ok(())
            },
        )
    }

    /// Whether the parameter has a setter.
    pub fn is_writable(&self) -> bool {
        self.setter.is_some()
    }

    /// Reads the current value.
    pub fn value(&self) -> String {
        (self.getter)()
    }

    /// Applies `value`: `Ok(false)` if the parameter is read-only, `Err` with the setter's
    /// reason if it refused.
    pub fn set(&self, value: &str) -> Result<bool, String> {
        match &self.setter {
            None => Ok(false),
            Some(setter) => setter(value).map(|()| true),
        }
    }
}

impl fmt::Debug for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Param")
            .field("writable", &self.is_writable())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_accepts_values_in_range_and_keeps_the_old_value_otherwise() {
        let credits = Arc::new(AtomicU64::new(8));
        let param = Param::u64(Arc::clone(&credits), 1..=256);
        assert!(param.is_writable());
        assert_eq!(param.value(), "8");
        assert_eq!(param.set(" 16\n"), Ok(true));
        assert_eq!(param.value(), "16");
        for bad in ["0", "257", "-1", "", "ten", "1.5", "18446744073709551616"] {
            let err = param.set(bad).expect_err(bad);
            assert!(!err.is_empty());
            assert_eq!(
                credits.load(Ordering::Relaxed),
                16,
                "{bad:?} changed the value"
            );
        }
        assert_eq!(param.set("256"), Ok(true));
        assert_eq!(param.set("1"), Ok(true));
    }

    #[test]
    fn flag_takes_only_0_or_1() {
        let flag = Arc::new(AtomicBool::new(false));
        let param = Param::flag(Arc::clone(&flag));
        assert_eq!(param.value(), "0");
        assert_eq!(param.set("1"), Ok(true));
        assert!(flag.load(Ordering::Relaxed));
        assert_eq!(param.value(), "1");
        for bad in ["yes", "2", "true", "", "01"] {
            assert!(param.set(bad).is_err(), "{bad:?}");
            assert!(flag.load(Ordering::Relaxed), "{bad:?} changed the flag");
        }
        assert_eq!(param.set("0\n"), Ok(true));
        assert!(!flag.load(Ordering::Relaxed));
    }

    #[test]
    fn counters_and_read_only_values_have_no_setter() {
        let sent = Arc::new(AtomicU64::new(3));
        let param = Param::counter(Arc::clone(&sent));
        sent.fetch_add(4, Ordering::Relaxed);
        assert_eq!(param.value(), "7");
        assert!(!param.is_writable());
        assert_eq!(param.set("0"), Ok(false));
        assert_eq!(param.value(), "7");
        assert_eq!(format!("{param:?}"), "Param { writable: false, .. }");
    }
}

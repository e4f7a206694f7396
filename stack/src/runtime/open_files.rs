//! The process's limit on open descriptors, which an embedded stack's targets share (two
//! descriptors per open object) with its sockets and the benchmarks' files.

/// The soft limit on open descriptors now; `None` where it cannot be read.
pub fn open_file_limit() -> Option<u64> {
    read().map(|limit| limit.rlim_cur)
}

/// Raises the limit, as servers do: the soft limit to the hard one and, where the process may
/// (root, CAP_SYS_RESOURCE), both to the kernel's most (`fs.nr_open`) first. A usual soft
/// limit of 1,024 is far below what a stack of thousands of nodes needs. A refusal leaves the
/// limit as it was; a run that outgrows it says so where it fails.
pub fn raise_open_file_limit() {
    let Some(limit) = read() else {
        return;
    };
    let most = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|text| text.trim().parse::<libc::rlim_t>().ok())
        .unwrap_or(limit.rlim_max)
        .max(limit.rlim_max);
    if set(most, most) || limit.rlim_cur >= limit.rlim_max {
        return;
    }
    set(limit.rlim_max, limit.rlim_max);
}

fn read() -> Option<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit)
}

fn set(soft: libc::rlim_t, hard: libc::rlim_t) -> bool {
    let limit = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit only reads the struct passed.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 }
}

#[cfg(test)]
mod tests {
    #[test]
    fn raising_never_lowers_the_limit() {
        let before = super::open_file_limit().unwrap();
        super::raise_open_file_limit();
        assert!(super::open_file_limit().unwrap() >= before);
    }
}

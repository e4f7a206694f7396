//! `iopath lfs ls -l`: a directory listed as `ls -l` lists it — `total`, then a line per entry
//! of type and permissions, links, owner, group, size, modification time and name — from what
//! the metadata service keeps and the objects say:
//!
//! - permissions: the bits the metadata service keeps (0644 for files and 0755 for
//!   directories as `lfs` and the mount make them);
//! - links: 1 for a file, 2 for a directory — the service keeps no link counts (there are no
//!   hard links) — as an `iopath mount` reports them;
//! - owner and group: the service keeps none, so, as an `iopath mount` does, every entry is
//!   shown as the invoking user's (named from `/etc/passwd` and `/etc/group`, or by number);
//! - size: a file's glimpsed from its objects, as `lfs stat`; 0 for a directory (the service
//!   keeps no directory size);
//! - time: the service's mtime — for a directory, when its entries last changed; for a file,
//!   its creation (writes go to the objects, which keep no time). Local time, as `ls`.
//! - `total`: the entries' sizes in 512-byte sectors (what the mount reports as blocks),
//!   summed and shown in KiB, as `ls` counts them.
//!
//! Formatting is pure ([`listing_text`]); [`long_listing`] gathers the entries.

use anyhow::Context as _;
use iopath_client::{Client, FileStat};

/// One entry to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name (or, for a file listed on its own, the path given).
    pub name: String,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// Permission bits (0: the default, as the mount shows it).
    pub mode: u32,
    /// Its size.
    pub size_bytes: u64,
    /// Modification time, local, broken down.
    pub mtime: Civil,
    /// Whether the time is within the last six months (`ls` shows the hour, else the year).
    pub recent: bool,
}

/// A moment in local time, as `ls` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// The year.
    pub year: i32,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    /// 0 to 23.
    pub hour: u32,
    /// 0 to 59.
    pub minute: u32,
}

/// Who every entry is shown as owned by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The user's name, or its number.
    pub user: String,
    /// The group's name, or its number.
    pub group: String,
}

/// `ls` calls a time older than this "not recent" and prints its year (GNU ls: half of a
/// Gregorian year).
const SIX_MONTHS_SECONDS: u64 = 31_556_952 / 2;

/// `ls -l PATH`: a directory's entries, or the one line of a file.
pub async fn long_listing(client: &Client, path: &str, human: bool) -> anyhow::Result<String> {
    let owner = Owner::invoking();
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64;
    let stat = client
        .stat(path)
        .await
        .with_context(|| format!("ls {path}"))?;
    if !stat.is_dir {
        let entry = entry(path.to_owned(), &stat, now_ns);
        return Ok(listing_text(&[entry], &owner, human, false));
    }
    let mut entries = Vec::new();
    // Bounded by the directory's size: one stat per entry (a file's glimpses its objects).
    for child in client
        .readdir_entries(path)
        .await
        .with_context(|| format!("ls {path}"))?
    {
        let child_path = if path.ends_with('/') {
            format!("{path}{}", child.name)
        } else {
            format!("{path}/{}", child.name)
        };
        let stat = client
            .stat(&child_path)
            .await
            .with_context(|| format!("ls: stat {child_path}"))?;
        entries.push(entry(child.name, &stat, now_ns));
    }
    Ok(listing_text(&entries, &owner, human, true))
}

fn entry(name: String, stat: &FileStat, now_ns: u64) -> Entry {
    let (mtime_s, now_s) = (stat.mtime_ns / 1_000_000_000, now_ns / 1_000_000_000);
    Entry {
        name,
        is_dir: stat.is_dir,
        mode: stat.mode,
        size_bytes: stat.size_bytes,
        mtime: Civil::local(mtime_s),
        recent: mtime_s <= now_s && now_s - mtime_s < SIX_MONTHS_SECONDS,
    }
}

/// `ls -l`'s lines for `entries`: with `total` first when a directory is listed; columns
/// aligned as `ls` aligns them (counts and sizes to the right, names to the left).
pub fn listing_text(entries: &[Entry], owner: &Owner, human: bool, total: bool) -> String {
    let size = |bytes: u64| {
        if human {
            ls_human(bytes)
        } else {
            bytes.to_string()
        }
    };
    let rows: Vec<[String; 5]> = entries
        .iter()
        .map(|e| {
            [
                mode_text(e.is_dir, e.mode),
                if e.is_dir { "2" } else { "1" }.to_owned(),
                size(e.size_bytes),
                time_text(e.mtime, e.recent),
                e.name.clone(),
            ]
        })
        .collect();
    let width = |column: usize| rows.iter().map(|r| r[column].len()).max().unwrap_or(0);
    let (links_w, size_w) = (width(1), width(2));
    let mut text = String::new();
    if total {
        // ls sums 512-byte blocks and shows them in 1 KiB units, rounded up.
        let sectors: u64 = entries.iter().map(|e| e.size_bytes.div_ceil(512)).sum();
        let shown = if human {
            ls_human(sectors * 512)
        } else {
            sectors.div_ceil(2).to_string()
        };
        text.push_str(&format!("total {shown}\n"));
    }
    for [mode, links, size, time, name] in rows {
        text.push_str(&format!(
            "{mode} {links:>links_w$} {} {} {size:>size_w$} {time} {name}\n",
            owner.user, owner.group
        ));
    }
    text
}

/// `drwxr-xr-x`: the type, then read, write and execute for user, group and others, with
/// setuid, setgid and sticky shown as `ls` shows them. Mode 0 is shown as the mount shows it:
/// 0755 for a directory, 0644 for a file.
pub fn mode_text(is_dir: bool, mode: u32) -> String {
    let mode = match (mode & 0o7777, is_dir) {
        (0, true) => 0o755,
        (0, false) => 0o644,
        (bits, _) => bits,
    };
    let mut text = String::from(if is_dir { "d" } else { "-" });
    for (shift, special, set_char) in [(6, 0o4000, 's'), (3, 0o2000, 's'), (0, 0o1000, 't')] {
        let bits = (mode >> shift) & 0o7;
        text.push(if bits & 0o4 != 0 { 'r' } else { '-' });
        text.push(if bits & 0o2 != 0 { 'w' } else { '-' });
        let execute = bits & 0o1 != 0;
        text.push(match (mode & special != 0, execute) {
            (true, true) => set_char,
            (true, false) => set_char.to_ascii_uppercase(),
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    text
}

/// `Jan  5 12:34` for a recent time, `Jan  5  2023` for an older one, as `ls` prints them.
pub fn time_text(at: Civil, recent: bool) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS[(at.month.clamp(1, 12) - 1) as usize];
    if recent {
        format!("{month} {:>2} {:02}:{:02}", at.day, at.hour, at.minute)
    } else {
        format!("{month} {:>2} {:>5}", at.day, at.year)
    }
}

/// `ls -h`'s sizes: bytes below 1 KiB; else powers of 1024 with a unit, rounded up, with one
/// decimal below 10 (`9.1M`, `12M`).
pub fn ls_human(bytes: u64) -> String {
    const UNITS: [char; 6] = ['K', 'M', 'G', 'T', 'P', 'E'];
    if bytes < 1024 {
        return bytes.to_string();
    }
    let bytes = u128::from(bytes);
    let (mut unit, mut scale) = (0, 1024u128);
    while bytes >= scale * 1024 && unit < UNITS.len() - 1 {
        scale *= 1024;
        unit += 1;
    }
    let tenths = (bytes * 10).div_ceil(scale);
    if tenths < 100 {
        return format!("{}.{}{}", tenths / 10, tenths % 10, UNITS[unit]);
    }
    let whole = bytes.div_ceil(scale);
    if whole >= 1024 && unit < UNITS.len() - 1 {
        return format!("1.0{}", UNITS[unit + 1]);
    }
    format!("{whole}{}", UNITS[unit])
}

impl Civil {
    /// `seconds` since the epoch in this machine's local time zone (`TZ`, or the system's
    /// zone, read by jiff as `bench ior` reads it).
    pub fn local(seconds: u64) -> Civil {
        // A time beyond what a timestamp holds is shown as the epoch.
        let at = i64::try_from(seconds)
            .ok()
            .and_then(|s| jiff::Timestamp::from_second(s).ok())
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
            .to_zoned(jiff::tz::TimeZone::system());
        Civil {
            year: i32::from(at.year()),
            month: at.month() as u32,
            day: at.day() as u32,
            hour: at.hour() as u32,
            minute: at.minute() as u32,
        }
    }
}

impl Owner {
    /// The user running this command, and its group: named by `/etc/passwd` and
    /// `/etc/group`, by number where they have no name for them.
    pub fn invoking() -> Owner {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let name_in = |file: &str, id: u32| {
            std::fs::read_to_string(file)
                .ok()
                .and_then(|text| name_of(&text, id))
                .unwrap_or_else(|| id.to_string())
        };
        Owner {
            user: name_in("/etc/passwd", uid),
            group: name_in("/etc/group", gid),
        }
    }
}

/// The name `/etc/passwd` or `/etc/group` text gives id `id` (`name:x:id:...`).
fn name_of(text: &str, id: u32) -> Option<String> {
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let (name, _, number) = (fields.next()?, fields.next()?, fields.next()?);
        (number.parse::<u32>().ok()? == id).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_as_ls_writes_them() {
        let table = [
            (true, 0o755, "drwxr-xr-x"),
            (false, 0o644, "-rw-r--r--"),
            (false, 0, "-rw-r--r--"),
            (true, 0, "drwxr-xr-x"),
            (false, 0o4755, "-rwsr-xr-x"),
            (false, 0o2644, "-rw-r-Sr--"),
            (true, 0o1777, "drwxrwxrwt"),
            (true, 0o1776, "drwxrwxrwT"),
        ];
        for (is_dir, mode, text) in table {
            assert_eq!(mode_text(is_dir, mode), text, "{mode:o}");
        }
    }

    #[test]
    fn human_sizes_round_up_as_ls_does() {
        let table = [
            (0, "0"),
            (1023, "1023"),
            (1024, "1.0K"),
            (1025, "1.1K"),
            (10 * 1024, "10K"),
            (9 * 1024 * 1024 + 5, "9.1M"),
            (12 << 20, "12M"),
            ((1 << 30) - 1, "1.0G"),
            (3 << 40, "3.0T"),
        ];
        for (bytes, text) in table {
            assert_eq!(ls_human(bytes), text, "{bytes}");
        }
    }

    #[test]
    fn times_show_the_hour_when_recent_and_the_year_otherwise() {
        let at = Civil {
            year: 2024,
            month: 3,
            day: 5,
            hour: 9,
            minute: 7,
        };
        assert_eq!(time_text(at, true), "Mar  5 09:07");
        assert_eq!(time_text(at, false), "Mar  5  2024");
    }

    #[test]
    fn names_come_from_the_files_database() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nada:x:1000:1000::/home/ada:/bin/sh\n";
        assert_eq!(name_of(passwd, 1000).as_deref(), Some("ada"));
        assert_eq!(name_of(passwd, 0).as_deref(), Some("root"));
        assert_eq!(name_of(passwd, 7), None);
    }

    #[test]
    fn columns_line_up_and_total_counts_kib() {
        let at = Civil {
            year: 2024,
            month: 1,
            day: 15,
            hour: 12,
            minute: 0,
        };
        let entries = [
            Entry {
                name: "d".into(),
                is_dir: true,
                mode: 0o755,
                size_bytes: 0,
                mtime: at,
                recent: true,
            },
            Entry {
                name: "big".into(),
                is_dir: false,
                mode: 0o644,
                size_bytes: 1_000_000,
                mtime: at,
                recent: false,
            },
        ];
        let owner = Owner {
            user: "ada".into(),
            group: "staff".into(),
        };
        // 1_000_000 bytes are 1954 sectors of 512 bytes: 977 KiB.
        assert_eq!(
            listing_text(&entries, &owner, false, true),
            "total 977\n\
             drwxr-xr-x 2 ada staff       0 Jan 15 12:00 d\n\
             -rw-r--r-- 1 ada staff 1000000 Jan 15  2024 big\n"
        );
        assert_eq!(
            listing_text(&entries[1..], &owner, true, false),
            "-rw-r--r-- 1 ada staff 977K Jan 15  2024 big\n"
        );
    }
}

//! The namespace core, exhaustively: each operation's outcomes and errors table by table,
//! layout placement, limits, and a seeded random walk checked against a path-map model with
//! the invariants verified after every change.
//!
//! The random walk prints its seed; set `IOPATH_MDS_SEED` to replay one.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use std::collections::{BTreeMap, BTreeSet};

use iopath_mds::error::errno::*;
use iopath_mds::limits::PATH_DEPTH_MAX;
use iopath_mds::namespace::op::Planned;
use iopath_mds::{
    FileType, Layout, MdsError, MdsLimits, MdsPath, Namespace, NamespaceConfig, ObjectRef, Op,
    Outcome, Owner, StripeInfo, StripeRequest,
};

const MIB: u64 = 1 << 20;

fn p(text: &str) -> MdsPath {
    MdsPath::parse(text).unwrap()
}

fn namespace(targets: &[u32]) -> Namespace {
    Namespace::new(NamespaceConfig::new(targets.to_vec())).unwrap()
}

/// Plans and applies `op` as the store does, then checks every invariant.
fn run(ns: &mut Namespace, op: Op) -> Result<Outcome, MdsError> {
    let before = ns.state().clone();
    let planned = ns.plan(&op, 1_000);
    let outcome = match planned {
        Err(e) => {
            assert_eq!(ns.state(), &before, "a refused {op:?} changed nothing");
            return Err(e);
        }
        Ok(Planned::Unchanged(outcome)) => outcome,
        Ok(Planned::Change(mutation)) => ns.apply(&mutation).unwrap(),
    };
    ns.check_invariants().unwrap();
    Ok(outcome)
}

fn mkdir(ns: &mut Namespace, path: &str) -> Result<Outcome, MdsError> {
    run(
        ns,
        Op::Mkdir {
            path: p(path),
            mode: 0o755,
            owner: Owner::UNRECORDED,
        },
    )
}

fn create(ns: &mut Namespace, path: &str, stripe: StripeRequest) -> Result<Layout, MdsError> {
    match run(
        ns,
        Op::Create {
            path: p(path),
            mode: 0o644,
            owner: Owner::UNRECORDED,
            stripe,
        },
    )? {
        Outcome::Created(attributes) => Ok(attributes.layout.unwrap()),
        other => panic!("create returned {other:?}"),
    }
}

fn file(ns: &mut Namespace, path: &str) -> Layout {
    create(ns, path, StripeRequest::INHERIT).unwrap()
}

fn stripe(size: u64, count: i64, offset: i64) -> StripeRequest {
    StripeRequest {
        stripe_size_bytes: size,
        stripe_count: count,
        stripe_offset: offset,
    }
}

fn names(ns: &Namespace, dir: &str) -> Vec<String> {
    ns.readdir(&p(dir), "", 0)
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.name)
        .collect()
}

fn targets_of(layout: &Layout) -> Vec<u32> {
    layout.objects().iter().map(|o| o.target).collect()
}

#[test]
fn a_fresh_namespace_is_an_empty_root() {
    let ns = namespace(&[0, 1]);
    let root = ns.stat(&MdsPath::root()).unwrap();
    assert_eq!(
        (root.ino, root.file_type, root.entries_count),
        (1, FileType::Directory, 0)
    );
    assert!(root.layout.is_none());
    assert_eq!(names(&ns, "/"), Vec::<String>::new());
    ns.check_invariants().unwrap();
}

#[test]
fn mkdir_create_stat_open_readdir() {
    let mut ns = namespace(&[0, 1, 2, 3]);
    mkdir(&mut ns, "/a").unwrap();
    mkdir(&mut ns, "/a/b").unwrap();
    let layout = file(&mut ns, "/a/b/f");
    file(&mut ns, "/a/g");
    assert_eq!(names(&ns, "/"), ["a"]);
    assert_eq!(names(&ns, "/a"), ["b", "g"]);
    let f = ns.stat(&p("/a/b/f")).unwrap();
    assert_eq!(f.file_type, FileType::Regular);
    assert_eq!((f.mode, f.ctime_ns, f.mtime_ns), (0o644, 1_000, 1_000));
    assert_eq!(f.layout.as_ref(), Some(&layout));
    assert_eq!(ns.open(&p("/a/b/f")).unwrap(), f);
    let a = ns.stat(&p("/a")).unwrap();
    assert_eq!(
        (a.file_type, a.entries_count, a.mode),
        (FileType::Directory, 2, 0o755)
    );
    let entries = ns.readdir(&p("/a"), "", 0).unwrap().entries;
    assert_eq!(entries[0].file_type, FileType::Directory);
    assert_eq!(entries[1].file_type, FileType::Regular);
}

#[test]
fn every_operation_refuses_what_posix_refuses() {
    // Setup: /d (dir), /d/f (file), /e (empty dir), /d/sub/x (file in a subdirectory).
    let setup = |ns: &mut Namespace| {
        mkdir(ns, "/d").unwrap();
        file(ns, "/d/f");
        mkdir(ns, "/e").unwrap();
        mkdir(ns, "/d/sub").unwrap();
        file(ns, "/d/sub/x");
    };
    let mkdir_op = |path: &str| Op::Mkdir {
        path: p(path),
        mode: 0o755,
        owner: Owner::UNRECORDED,
    };
    let create_op = |path: &str| Op::Create {
        path: p(path),
        mode: 0o644,
        owner: Owner::UNRECORDED,
        stripe: StripeRequest::INHERIT,
    };
    let unlink = |path: &str| Op::Unlink {
        path: p(path),
        keep: None,
    };
    let rmdir = |path: &str| Op::Rmdir { path: p(path) };
    let rename = |s: &str, t: &str| Op::Rename {
        source: p(s),
        target: p(t),
        keep: None,
    };
    let cases: Vec<(Op, u32, &str)> = vec![
        (mkdir_op("/"), EEXIST, "/: already exists"),
        (mkdir_op("/d"), EEXIST, "/d: already exists"),
        (mkdir_op("/d/f"), EEXIST, "/d/f: already exists"),
        (
            mkdir_op("/nope/x"),
            ENOENT,
            "/nope: no such file or directory",
        ),
        (mkdir_op("/d/f/x"), ENOTDIR, "/d/f: not a directory"),
        (mkdir_op("/d/f/x/y"), ENOTDIR, "/d/f: not a directory"),
        (
            Op::Mkdir {
                path: p("/m"),
                mode: 0o10000,
                owner: Owner::UNRECORDED,
            },
            EINVAL,
            "mode 0o10000",
        ),
        (create_op("/"), EEXIST, "already exists"),
        (create_op("/d"), EEXIST, "/d: already exists"),
        (create_op("/d/f"), EEXIST, "/d/f: already exists"),
        (create_op("/nope/f"), ENOENT, "/nope: no such"),
        (create_op("/d/f/g"), ENOTDIR, "/d/f: not a directory"),
        (unlink("/"), EISDIR, "/: is a directory"),
        (unlink("/d"), EISDIR, "/d: is a directory"),
        (unlink("/d/nope"), ENOENT, "/d/nope: no such"),
        (unlink("/nope/f"), ENOENT, "/nope: no such"),
        (unlink("/d/f/g"), ENOTDIR, "/d/f: not a directory"),
        (rmdir("/"), EINVAL, "root directory cannot be removed"),
        (rmdir("/d"), ENOTEMPTY, "/d: directory not empty"),
        (rmdir("/d/f"), ENOTDIR, "/d/f: not a directory"),
        (rmdir("/nope"), ENOENT, "/nope: no such"),
        (
            rename("/", "/x"),
            EINVAL,
            "root directory cannot be renamed",
        ),
        (
            rename("/d", "/"),
            EINVAL,
            "root directory cannot be renamed",
        ),
        (rename("/nope", "/x"), ENOENT, "/nope: no such"),
        (rename("/d/f", "/nope/f"), ENOENT, "/nope: no such"),
        (rename("/d/f", "/d/f/g"), ENOTDIR, "/d/f: not a directory"),
        (
            rename("/d", "/d/sub/d"),
            EINVAL,
            "cannot move directory /d into itself",
        ),
        (rename("/d", "/d/new"), EINVAL, "into itself"),
        (rename("/d/f", "/e"), EISDIR, "/e: is a directory"),
        (rename("/e", "/d/f"), ENOTDIR, "/d/f: not a directory"),
        (rename("/e", "/d"), ENOTEMPTY, "/d: directory not empty"),
        (rename("/d/sub", "/d"), ENOTEMPTY, "/d: directory not empty"),
        (
            Op::SetStripe {
                path: p("/d/f"),
                stripe: Some(stripe(0, 2, -1)),
            },
            EINVAL,
            "layout is fixed when it is created",
        ),
        (
            Op::SetStripe {
                path: p("/nope"),
                stripe: None,
            },
            ENOENT,
            "/nope: no such",
        ),
        (
            Op::SetStripe {
                path: p("/d"),
                stripe: Some(stripe(100_000, 1, -1)),
            },
            EINVAL,
            "stripe size 100000 bytes is not a positive multiple of 65536 bytes (64 KiB)",
        ),
        (
            Op::SetStripe {
                path: p("/d"),
                stripe: Some(stripe(8 << 30, 1, -1)),
            },
            EINVAL,
            "exceeds the maximum",
        ),
        (
            Op::SetStripe {
                path: p("/d"),
                stripe: Some(stripe(0, 1, 4)),
            },
            EINVAL,
            "starting target index 4 is out of range",
        ),
        (
            Op::SetStripe {
                path: p("/d"),
                stripe: Some(stripe(0, -2, -1)),
            },
            EINVAL,
            "stripe count -2 is invalid",
        ),
        (
            Op::SetStripe {
                path: p("/d"),
                stripe: Some(stripe(0, 1, -7)),
            },
            EINVAL,
            "starting target index -7 is invalid",
        ),
        (
            Op::Create {
                path: p("/d/z"),
                mode: 0o644,
                owner: Owner::UNRECORDED,
                stripe: stripe(65_537, 1, -1),
            },
            EINVAL,
            "not a positive multiple",
        ),
        (
            Op::Create {
                path: p("/d/z"),
                mode: 0o644,
                owner: Owner::UNRECORDED,
                stripe: stripe(0, 1, 9),
            },
            EINVAL,
            "starting target index 9 is out of range",
        ),
        (
            Op::Create {
                path: p("/d/z"),
                mode: 0o644,
                owner: Owner::UNRECORDED,
                stripe: stripe(0, i64::MAX, -1),
            },
            EINVAL,
            "exceeds the widest layout",
        ),
    ];
    for (op, errno, message) in cases {
        let mut ns = namespace(&[0, 1, 2, 3]);
        setup(&mut ns);
        let error = run(&mut ns, op.clone()).unwrap_err();
        assert_eq!(error.errno(), errno, "{op:?}: {error}");
        assert!(error.to_string().contains(message), "{op:?}: {error}");
    }
}

#[test]
fn reads_refuse_what_posix_refuses() {
    let mut ns = namespace(&[0]);
    mkdir(&mut ns, "/d").unwrap();
    file(&mut ns, "/d/f");
    let cases: Vec<(Result<(), MdsError>, u32)> = vec![
        (ns.stat(&p("/nope")).map(drop), ENOENT),
        (ns.stat(&p("/d/f/x")).map(drop), ENOTDIR),
        (ns.open(&p("/d")).map(drop), EISDIR),
        (ns.open(&p("/")).map(drop), EISDIR),
        (ns.open(&p("/d/nope")).map(drop), ENOENT),
        (ns.readdir(&p("/d/f"), "", 0).map(drop), ENOTDIR),
        (ns.readdir(&p("/nope"), "", 0).map(drop), ENOENT),
        (ns.getstripe(&p("/nope")).map(drop), ENOENT),
    ];
    for (i, (result, errno)) in cases.into_iter().enumerate() {
        assert_eq!(result.unwrap_err().errno(), errno, "case {i}");
    }
}

#[test]
fn unlink_and_rmdir_return_what_the_caller_must_clean_up() {
    let mut ns = namespace(&[0, 1]);
    mkdir(&mut ns, "/d").unwrap();
    let layout = create(&mut ns, "/d/f", stripe(0, -1, -1)).unwrap();
    assert_eq!(
        run(
            &mut ns,
            Op::Unlink {
                path: p("/d/f"),
                keep: None,
            }
        )
        .unwrap(),
        Outcome::Unlinked(layout)
    );
    assert_eq!(ns.stat(&p("/d/f")).unwrap_err().errno(), ENOENT);
    assert_eq!(
        run(&mut ns, Op::Rmdir { path: p("/d") }).unwrap(),
        Outcome::Removed
    );
    assert_eq!(names(&ns, "/"), Vec::<String>::new());
    assert_eq!(ns.inodes_count(), 1);
}

#[test]
fn rename_moves_replaces_and_keeps_layouts() {
    let mut ns = namespace(&[0, 1, 2]);
    mkdir(&mut ns, "/a").unwrap();
    mkdir(&mut ns, "/b").unwrap();
    let f = file(&mut ns, "/a/f");
    let g = file(&mut ns, "/a/g");
    let rename = |ns: &mut Namespace, s: &str, t: &str| match run(
        ns,
        Op::Rename {
            source: p(s),
            target: p(t),
            keep: None,
        },
    )
    .unwrap()
    {
        Outcome::Renamed { replaced, .. } => replaced,
        other => panic!("{other:?}"),
    };
    // Same directory, new name.
    assert_eq!(rename(&mut ns, "/a/f", "/a/f2"), None);
    assert_eq!(names(&ns, "/a"), ["f2", "g"]);
    // Onto itself: nothing happens.
    assert_eq!(rename(&mut ns, "/a/g", "/a/g"), None);
    // Across directories, replacing a file: its layout comes back for destruction.
    file(&mut ns, "/b/victim");
    let victim = ns.open(&p("/b/victim")).unwrap().layout.unwrap();
    assert_eq!(rename(&mut ns, "/a/g", "/b/victim"), Some(victim));
    assert_eq!(ns.open(&p("/b/victim")).unwrap().layout.unwrap(), g);
    assert_eq!(names(&ns, "/a"), ["f2"]);
    // A directory with contents moves with them; its parent pointer follows.
    mkdir(&mut ns, "/a/sub").unwrap();
    file(&mut ns, "/a/sub/deep");
    assert_eq!(rename(&mut ns, "/a", "/b/a"), None);
    assert_eq!(names(&ns, "/"), ["b"]);
    assert_eq!(ns.open(&p("/b/a/f2")).unwrap().layout.unwrap(), f);
    ns.open(&p("/b/a/sub/deep")).unwrap();
    // A directory replaces an empty directory.
    mkdir(&mut ns, "/empty").unwrap();
    assert_eq!(rename(&mut ns, "/b/a/sub", "/empty"), None);
    ns.open(&p("/empty/deep")).unwrap();
    // Moving a directory up out of its parent.
    assert_eq!(rename(&mut ns, "/b/a", "/a"), None);
    assert_eq!(names(&ns, "/"), ["a", "b", "empty"]);
    // The root; /a, /b, /empty (the moved sub; the replaced directory is gone); f2, victim
    // (g's inode; the replaced file is gone), deep.
    assert_eq!(ns.inodes_count(), 7);
}

#[test]
fn round_robin_spreads_single_stripe_files_over_every_target() {
    let mut ns = namespace(&[0, 1, 2, 3]);
    let starts: Vec<u32> = (0..9)
        .map(|i| file(&mut ns, &format!("/f{i}")).objects()[0].target)
        .collect();
    assert_eq!(starts, [0, 1, 2, 3, 0, 1, 2, 3, 0]);
    // Object ids count up per target from 1, never reused.
    let ids: Vec<u64> = (0..9)
        .map(|i| {
            ns.open(&p(&format!("/f{i}")))
                .unwrap()
                .layout
                .unwrap()
                .objects()[0]
                .object_id
        })
        .collect();
    assert_eq!(ids, [1, 1, 1, 1, 2, 2, 2, 2, 3]);
    run(
        &mut ns,
        Op::Unlink {
            path: p("/f8"),
            keep: None,
        },
    )
    .unwrap();
    // A start index does not move the round-robin cursor; -1 continues from it.
    assert_eq!(
        targets_of(&create(&mut ns, "/x", stripe(0, 2, 3)).unwrap()),
        [3, 0]
    );
    let next = create(&mut ns, "/y", StripeRequest::INHERIT).unwrap();
    assert_eq!(
        next.objects(),
        [ObjectRef {
            target: 1,
            object_id: 3
        }]
    );
    // Target 0's next id is 4: the unlinked file's id 3 is not handed out again.
    let z = create(&mut ns, "/z", stripe(0, 1, 0)).unwrap();
    assert_eq!(
        z.objects(),
        [ObjectRef {
            target: 0,
            object_id: 5
        }]
    );
}

#[test]
fn layouts_follow_lustre_defaults_and_requests() {
    let targets = [10, 20, 30, 40];
    let cases: Vec<(StripeRequest, u64, Vec<u32>)> = vec![
        (StripeRequest::INHERIT, MIB, vec![10]),
        (stripe(0, 0, -1), MIB, vec![10]),
        (stripe(0, -1, -1), MIB, vec![10, 20, 30, 40]),
        (stripe(64 << 10, 2, -1), 64 << 10, vec![10, 20]),
        (stripe(4 * MIB, 4, 30), 4 * MIB, vec![30, 40, 10, 20]),
        (stripe(0, 1, 40), MIB, vec![40]),
        (stripe(0, -1, 20), MIB, vec![20, 30, 40, 10]),
    ];
    for (request, size, expected) in cases {
        let mut ns = namespace(&targets);
        let layout = create(&mut ns, "/f", request).unwrap();
        assert_eq!(layout.stripe_size_bytes(), size, "{request:?}");
        assert_eq!(targets_of(&layout), expected, "{request:?}");
        assert_eq!(layout.stripe_offset(), expected[0]);
        assert_eq!(layout.stripe_count() as usize, expected.len());
    }
    // Offsets are target indices, not positions: 1 is not a target here.
    let mut ns = namespace(&targets);
    let error = create(&mut ns, "/f", stripe(0, 1, 1)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("starting target index 1 is out of range"),
        "{error}"
    );
    // No targets at all: directories work, files cannot be striped.
    let mut none = namespace(&[]);
    mkdir(&mut none, "/d").unwrap();
    let error = create(&mut none, "/d/f", StripeRequest::INHERIT).unwrap_err();
    assert!(error.to_string().contains("no targets"), "{error}");
}

#[test]
fn setstripe_on_a_directory_is_the_default_for_new_files_and_subdirectories() {
    let mut ns = namespace(&[0, 1, 2, 3]);
    mkdir(&mut ns, "/d").unwrap();
    run(
        &mut ns,
        Op::SetStripe {
            path: p("/d"),
            stripe: Some(stripe(4 * MIB, 2, -1)),
        },
    )
    .unwrap();
    assert_eq!(
        ns.getstripe(&p("/d")).unwrap(),
        StripeInfo::Directory {
            default_stripe: stripe(4 * MIB, 2, -1),
            set_here: true
        }
    );
    let f = file(&mut ns, "/d/f");
    assert_eq!((f.stripe_size_bytes(), f.stripe_count()), (4 * MIB, 2));
    // A request's own fields win; its inherited fields come from the directory.
    let g = create(&mut ns, "/d/g", stripe(0, 3, -1)).unwrap();
    assert_eq!((g.stripe_size_bytes(), g.stripe_count()), (4 * MIB, 3));
    // New subdirectories start with the parent's default.
    mkdir(&mut ns, "/d/sub").unwrap();
    assert_eq!(
        ns.stat(&p("/d/sub")).unwrap().default_stripe,
        Some(stripe(4 * MIB, 2, -1))
    );
    assert_eq!(file(&mut ns, "/d/sub/h").stripe_count(), 2);
    // Outside it, the file system's default.
    assert_eq!(file(&mut ns, "/plain").stripe_count(), 1);
    assert_eq!(
        ns.getstripe(&p("/")).unwrap(),
        StripeInfo::Directory {
            default_stripe: StripeRequest::LUSTRE_DEFAULT,
            set_here: false
        }
    );
    // The root's default is the file system's default for directories without their own.
    run(
        &mut ns,
        Op::SetStripe {
            path: MdsPath::root(),
            stripe: Some(stripe(0, -1, -1)),
        },
    )
    .unwrap();
    assert_eq!(file(&mut ns, "/wide").stripe_count(), 4);
    mkdir(&mut ns, "/e").unwrap();
    assert_eq!(file(&mut ns, "/e/wide").stripe_count(), 4);
    assert_eq!(file(&mut ns, "/d/narrow").stripe_count(), 2);
    // Removing a default (`lfs setstripe -d`), or setting all-inherit, clears it.
    run(
        &mut ns,
        Op::SetStripe {
            path: p("/d"),
            stripe: None,
        },
    )
    .unwrap();
    assert_eq!(ns.stat(&p("/d")).unwrap().default_stripe, None);
    assert_eq!(file(&mut ns, "/d/after").stripe_count(), 4);
    run(
        &mut ns,
        Op::SetStripe {
            path: p("/d/sub"),
            stripe: Some(StripeRequest::INHERIT),
        },
    )
    .unwrap();
    assert_eq!(ns.stat(&p("/d/sub")).unwrap().default_stripe, None);
    // getstripe on a file is its layout.
    assert_eq!(ns.getstripe(&p("/d/f")).unwrap(), StripeInfo::File(f));
}

#[test]
fn readdir_pages_in_name_order() {
    let mut ns = namespace(&[0]);
    let all: Vec<String> = (0..25).map(|i| format!("n{i:02}")).collect();
    for name in all.iter().rev() {
        file(&mut ns, &format!("/{name}"));
    }
    let mut seen = Vec::new();
    let mut after = String::new();
    for _ in 0..10 {
        let page = ns.readdir(&MdsPath::root(), &after, 7).unwrap();
        assert!(page.entries.len() <= 7);
        seen.extend(page.entries.iter().map(|e| e.name.clone()));
        after = seen.last().unwrap().clone();
        if !page.more {
            break;
        }
    }
    assert_eq!(seen, all);
    let page = ns.readdir(&MdsPath::root(), "n24", 7).unwrap();
    assert!(page.entries.is_empty() && !page.more);
    // A cursor need not be an existing name.
    let page = ns.readdir(&MdsPath::root(), "n10x", 2).unwrap();
    assert_eq!(page.entries[0].name, "n11");
}

#[test]
fn limits_are_enforced_with_clear_errors() {
    let mut config = NamespaceConfig::new(vec![0]);
    config.limits = MdsLimits {
        inodes_max: 5,
        entries_per_directory_max: 3,
        ..MdsLimits::default()
    };
    let mut ns = Namespace::new(config).unwrap();
    for name in ["/a", "/b", "/c"] {
        mkdir(&mut ns, name).unwrap();
    }
    let error = mkdir(&mut ns, "/d").unwrap_err();
    assert_eq!(error.errno(), ENOSPC);
    assert!(
        error
            .to_string()
            .contains("entries in one directory (maximum 3)"),
        "{error}"
    );
    file(&mut ns, "/a/f");
    let error = create(&mut ns, "/a/g", StripeRequest::INHERIT).unwrap_err();
    assert!(error.to_string().contains("inodes (maximum 5)"), "{error}");
    // Renaming within a full directory is fine; into it is not.
    run(
        &mut ns,
        Op::Rename {
            source: p("/a"),
            target: p("/a2"),
            keep: None,
        },
    )
    .unwrap();
    run(
        &mut ns,
        Op::Unlink {
            path: p("/a2/f"),
            keep: None,
        },
    )
    .unwrap();
    file(&mut ns, "/a2/f");
    let error = run(
        &mut ns,
        Op::Rename {
            source: p("/a2/f"),
            target: p("/f"),
            keep: None,
        },
    )
    .unwrap_err();
    assert_eq!(error.errno(), ENOSPC);
}

#[test]
fn directories_cannot_be_moved_deeper_than_the_depth_limit() {
    let mut ns = namespace(&[0]);
    let mut path = String::new();
    for _ in 0..PATH_DEPTH_MAX {
        path.push_str("/d");
        mkdir(&mut ns, &path).unwrap();
    }
    // Depth 64 is the deepest directory; nothing fits inside it.
    let error = MdsPath::parse(&format!("{path}/f")).unwrap_err();
    assert_eq!(error.errno(), ENAMETOOLONG);
    // A directory holding a file moved under /d/d (depth 2) puts the file at depth 4: fine.
    mkdir(&mut ns, "/x").unwrap();
    file(&mut ns, "/x/f");
    run(
        &mut ns,
        Op::Rename {
            source: p("/x"),
            target: p("/d/d/x"),
            keep: None,
        },
    )
    .unwrap();
    // Moving it under depth 63 would put the file at depth 65.
    let deep_parent: String = "/d".repeat(PATH_DEPTH_MAX - 1);
    let error = run(
        &mut ns,
        Op::Rename {
            source: p("/d/d/x"),
            target: p(&format!("{deep_parent}/x")),
            keep: None,
        },
    )
    .unwrap_err();
    assert_eq!(error.errno(), EINVAL);
    assert!(error.to_string().contains("65 levels deep"), "{error}");
}

#[test]
fn configurations_are_checked() {
    let mut config = NamespaceConfig::new(vec![0, 1, 0]);
    assert!(
        Namespace::new(config.clone())
            .unwrap_err()
            .to_string()
            .contains("configured twice")
    );
    config.targets = vec![0, 1];
    config.default_stripe = stripe(0, 1, -1);
    assert!(
        Namespace::new(config.clone())
            .unwrap_err()
            .to_string()
            .contains("must give a stripe size")
    );
    // Wider than the targets: kept, and capped where a file is made, as Lustre's.
    config.default_stripe = stripe(MIB, 3, -1);
    assert!(Namespace::new(config.clone()).is_ok());
    config.default_stripe = stripe(MIB, 1, 5);
    assert!(
        Namespace::new(config.clone())
            .unwrap_err()
            .to_string()
            .contains("out of range")
    );
    config.default_stripe = stripe(MIB, -1, 1);
    Namespace::new(config).unwrap();
}

#[test]
fn mutations_that_do_not_fit_are_refused_and_change_nothing() {
    use iopath_mds::namespace::op::Mutation;
    let mut ns = namespace(&[0, 1]);
    mkdir(&mut ns, "/d").unwrap();
    file(&mut ns, "/d/f");
    let before = ns.state().clone();
    let object = ObjectRef {
        target: 0,
        object_id: 9,
    };
    assert!(Layout::new(MIB, vec![object]).is_ok());
    // A create whose layout is not one (a stripe size of 1000, no objects) cannot even be
    // made: a `Layout` is checked when built, and when read back off the log.
    assert!(Layout::new(1000, vec![object]).is_err());
    assert!(Layout::new(MIB, vec![]).is_err());
    let bad = vec![
        Mutation::Mkdir {
            parent: 99,
            name: "x".into(),
            ino: 4,
            mode: 0,
            uid: None,
            gid: None,
            time_ns: 0,
            default_stripe: None,
        },
        Mutation::Mkdir {
            parent: 1,
            name: "x".into(),
            ino: 7,
            mode: 0,
            uid: None,
            gid: None,
            time_ns: 0,
            default_stripe: None,
        },
        Mutation::Mkdir {
            parent: 1,
            name: "d".into(),
            ino: 4,
            mode: 0,
            uid: None,
            gid: None,
            time_ns: 0,
            default_stripe: None,
        },
        Mutation::Mkdir {
            parent: 1,
            name: "..".into(),
            ino: 4,
            mode: 0,
            uid: None,
            gid: None,
            time_ns: 0,
            default_stripe: None,
        },
        Mutation::Mkdir {
            parent: 3,
            name: "x".into(),
            ino: 4,
            mode: 0,
            uid: None,
            gid: None,
            time_ns: 0,
            default_stripe: None,
        },
        Mutation::Unlink {
            parent: 2,
            name: "f".into(),
            ino: 2,
            time_ns: 0,
            orphan_owner: None,
        },
        Mutation::Unlink {
            parent: 1,
            name: "d".into(),
            ino: 2,
            time_ns: 0,
            orphan_owner: None,
        },
        Mutation::Rmdir {
            parent: 1,
            name: "d".into(),
            ino: 2,
            time_ns: 0,
        },
        Mutation::Rename {
            source_parent: 2,
            source_name: "f".into(),
            target_parent: 1,
            target_name: "d".into(),
            ino: 3,
            replaced: None,
            time_ns: 0,
            orphan_owner: None,
        },
        Mutation::Rename {
            source_parent: 1,
            source_name: "d".into(),
            target_parent: 2,
            target_name: "x".into(),
            ino: 2,
            replaced: None,
            time_ns: 0,
            orphan_owner: None,
        },
        Mutation::SetStripe {
            dir: 3,
            default_stripe: None,
            time_ns: 0,
        },
    ];
    for mutation in bad {
        assert!(ns.apply(&mutation).is_err(), "{mutation:?} applied");
        assert_eq!(ns.state(), &before, "{mutation:?} changed something");
    }
}

// ---- a seeded random walk against a model ----

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Dir,
    File(Layout),
}

/// POSIX semantics over a map from path to node, written independently of the core.
#[derive(Default)]
struct Model {
    nodes: BTreeMap<String, Node>,
}

fn parent_and_name(path: &str) -> (String, String) {
    let cut = path.rfind('/').unwrap();
    let parent = if cut == 0 {
        "/".to_owned()
    } else {
        path[..cut].to_owned()
    };
    (parent, path[cut + 1..].to_owned())
}

impl Model {
    fn kind(&self, path: &str) -> Option<&Node> {
        if path == "/" {
            return Some(&Node::Dir);
        }
        self.nodes.get(path)
    }

    /// Walks `dir`'s ancestors and itself: ENOENT at the first missing one, ENOTDIR at a file.
    fn check_dir(&self, dir: &str) -> Result<(), u32> {
        let mut prefix = String::new();
        for name in dir.split('/').skip(1).filter(|n| !n.is_empty()) {
            prefix.push('/');
            prefix.push_str(name);
            match self.kind(&prefix) {
                None => return Err(ENOENT),
                Some(Node::File(_)) => return Err(ENOTDIR),
                Some(Node::Dir) => {}
            }
        }
        Ok(())
    }

    fn has_children(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        self.nodes.keys().any(|k| k.starts_with(&prefix))
    }

    fn mkdir_or_create(&mut self, path: &str, node: Node) -> Result<(), u32> {
        if path == "/" {
            return Err(EEXIST);
        }
        let (parent, _) = parent_and_name(path);
        self.check_dir(&parent)?;
        if self.nodes.contains_key(path) {
            return Err(EEXIST);
        }
        self.nodes.insert(path.to_owned(), node);
        Ok(())
    }

    fn unlink(&mut self, path: &str) -> Result<Layout, u32> {
        if path == "/" {
            return Err(EISDIR);
        }
        self.check_dir(&parent_and_name(path).0)?;
        match self.nodes.get(path) {
            None => Err(ENOENT),
            Some(Node::Dir) => Err(EISDIR),
            Some(Node::File(layout)) => {
                let layout = layout.clone();
                self.nodes.remove(path);
                Ok(layout)
            }
        }
    }

    fn rmdir(&mut self, path: &str) -> Result<(), u32> {
        if path == "/" {
            return Err(EINVAL);
        }
        self.check_dir(&parent_and_name(path).0)?;
        match self.nodes.get(path) {
            None => Err(ENOENT),
            Some(Node::File(_)) => Err(ENOTDIR),
            Some(Node::Dir) if self.has_children(path) => Err(ENOTEMPTY),
            Some(Node::Dir) => {
                self.nodes.remove(path);
                Ok(())
            }
        }
    }

    fn rename(&mut self, source: &str, target: &str) -> Result<Option<Layout>, u32> {
        if source == "/" {
            return Err(EINVAL);
        }
        self.check_dir(&parent_and_name(source).0)?;
        let moving = self.nodes.get(source).cloned().ok_or(ENOENT)?;
        if target == "/" {
            return Err(EINVAL);
        }
        self.check_dir(&parent_and_name(target).0)?;
        if source == target {
            return Ok(None);
        }
        if moving == Node::Dir && target.starts_with(&format!("{source}/")) {
            return Err(EINVAL);
        }
        let mut replaced = None;
        match (&moving, self.nodes.get(target)) {
            (Node::File(_), Some(Node::Dir)) => return Err(EISDIR),
            (Node::Dir, Some(Node::File(_))) => return Err(ENOTDIR),
            (Node::Dir, Some(Node::Dir)) if self.has_children(target) => return Err(ENOTEMPTY),
            (_, Some(Node::File(layout))) => replaced = Some(layout.clone()),
            _ => {}
        }
        self.nodes.remove(target);
        let prefix = format!("{source}/");
        let moved: Vec<(String, Node)> = self
            .nodes
            .iter()
            .filter(|(k, _)| k.as_str() == source || k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (old, node) in moved {
            self.nodes.remove(&old);
            self.nodes
                .insert(format!("{target}{}", &old[source.len()..]), node);
        }
        Ok(replaced)
    }
}

/// Every path in the core's namespace with its node, by walking readdir from the root.
fn tree(ns: &Namespace) -> BTreeMap<String, Node> {
    let mut found = BTreeMap::new();
    let mut pending = vec!["/".to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in ns.readdir(&p(&dir), "", 0).unwrap().entries {
            let path = if dir == "/" {
                format!("/{}", entry.name)
            } else {
                format!("{dir}/{}", entry.name)
            };
            let node = match entry.file_type {
                FileType::Directory => {
                    pending.push(path.clone());
                    Node::Dir
                }
                FileType::Regular => Node::File(ns.open(&p(&path)).unwrap().layout.unwrap()),
                other => panic!("the walk makes no {other:?}"),
            };
            found.insert(path, node);
        }
    }
    found
}

#[test]
fn random_walks_agree_with_a_path_map_model() {
    let seed = std::env::var("IOPATH_MDS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x4D_44_53);
    println!("IOPATH_MDS_SEED={seed}");
    let mut rng = Rng(seed);
    // Paths up to three deep over three names, so operations collide often.
    let mut paths = vec!["/".to_owned()];
    for a in ["a", "b", "c"] {
        paths.push(format!("/{a}"));
        for b in ["a", "b", "c"] {
            paths.push(format!("/{a}/{b}"));
            for c in ["a", "b"] {
                paths.push(format!("/{a}/{b}/{c}"));
            }
        }
    }
    let mut errors_seen = BTreeSet::new();
    for walk in 0..20 {
        let mut ns = namespace(&[0, 1, 2]);
        let mut model = Model::default();
        let mut objects_ever = BTreeSet::new();
        for step in 0..150 {
            let path = rng.pick(&paths).clone();
            let other = rng.pick(&paths).clone();
            let context = format!("seed {seed} walk {walk} step {step}");
            let (core, expected): (Result<Option<Layout>, u32>, Result<Option<Layout>, u32>) =
                match rng.next() % 6 {
                    0 | 1 => {
                        let result = mkdir(&mut ns, &path).map(|_| None).map_err(|e| e.errno());
                        (
                            result,
                            model.mkdir_or_create(&path, Node::Dir).map(|()| None),
                        )
                    }
                    2 => {
                        let request = *rng.pick(&[
                            StripeRequest::INHERIT,
                            stripe(0, -1, -1),
                            stripe(64 << 10, 2, 1),
                        ]);
                        let result = create(&mut ns, &path, request).map_err(|e| e.errno());
                        let expected = match &result {
                            Ok(layout) => {
                                for object in layout.objects() {
                                    assert!(
                                        objects_ever.insert(*object),
                                        "{context}: object {object:?} reused"
                                    );
                                }
                                model.mkdir_or_create(&path, Node::File(layout.clone()))
                            }
                            // The core refused: the model must refuse too (a placeholder it
                            // would store makes the tree comparison fail loudly if not).
                            Err(_) => model.mkdir_or_create(&path, Node::Dir),
                        };
                        (result.map(|_| None), expected.map(|()| None))
                    }
                    3 => {
                        let result = run(
                            &mut ns,
                            Op::Unlink {
                                path: p(&path),
                                keep: None,
                            },
                        )
                        .map_err(|e| e.errno())
                        .map(|o| match o {
                            Outcome::Unlinked(layout) => Some(layout),
                            other => panic!("{other:?}"),
                        });
                        (result, model.unlink(&path).map(Some))
                    }
                    4 => {
                        let result = run(&mut ns, Op::Rmdir { path: p(&path) })
                            .map(|_| None)
                            .map_err(|e| e.errno());
                        (result, model.rmdir(&path).map(|()| None))
                    }
                    _ => {
                        let result = run(
                            &mut ns,
                            Op::Rename {
                                source: p(&path),
                                target: p(&other),
                                keep: None,
                            },
                        )
                        .map_err(|e| e.errno())
                        .map(|o| match o {
                            Outcome::Renamed { replaced, .. } => replaced,
                            other => panic!("{other:?}"),
                        });
                        (result, model.rename(&path, &other))
                    }
                };
            assert_eq!(core, expected, "{context}: {path} {other}");
            if let Err(errno) = core {
                errors_seen.insert(errno);
            }
            assert_eq!(tree(&ns), model.nodes, "{context}");
        }
    }
    // The walk reached every error the model knows.
    for errno in [EEXIST, ENOENT, ENOTDIR, EISDIR, ENOTEMPTY, EINVAL] {
        assert!(
            errors_seen.contains(&errno),
            "the walk never produced errno {errno}"
        );
    }
}

//! IOR's directives — `blockSize=1m`, `filePerProc=1` — as `-O` takes them and as a script
//! (`-f`) holds them, applied to [`IorOptions`]; and [`IorOptions::tests`], the options with
//! their directives checked into the tests to run.
//!
//! A script is IOR's:
//!
//! ```text
//! IOR START
//!     api=POSIX
//!     blockSize=4m, transferSize=1m   # several on a line, separated by commas
//!     writeFile=1
//! RUN
//!     readFile=1                      # the next test: the one before, with this changed
//! RUN
//! IOR STOP
//! ```
//!
//! Lines before `IOR START` are ignored; `#` starts a comment; keys are case-insensitive.
//! Each `RUN` runs a test; directives after a `RUN` begin the next test, a copy of the one
//! before. A directive for something iopath does not model is refused with the reason,
//! unless it asks for IOR's default (so that IOR's own example scripts, which list every
//! key, run).

use std::path::PathBuf;

use iopath_fabric::units::parse_size;

use super::params::{IorOptions, IorParams, SCRIPT_MAX_BYTES, read_bounded};
use crate::error::BenchError;

impl IorOptions {
    /// The tests these options ask for, checked: the flags with the `-O` directives applied,
    /// then, with `-f`, each test of the script. One output format and summary file serve the
    /// whole run, as in IOR.
    pub fn tests(&self) -> Result<Vec<IorParams>, BenchError> {
        let mut base = self.clone();
        for option in &self.ior_options {
            apply_line(&mut base, option).map_err(|why| BenchError::BadOption {
                option: "-O".into(),
                why,
            })?;
        }
        let tests = match &self.script {
            None => vec![base],
            Some(path) => {
                let text = read_bounded(path, SCRIPT_MAX_BYTES)
                    .map_err(|e| BenchError::io(format!("-f: read {}", path.display()), e))?;
                script(&text, &base).map_err(|(line, why)| BenchError::BadOption {
                    option: format!("-f {}, line {line}", path.display()),
                    why,
                })?
            }
        };
        let checked = tests
            .iter()
            .enumerate()
            .map(|(id, options)| IorParams::from_options(options, id as u32))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(first) = checked.first()
            && let Some(other) = checked
                .iter()
                .find(|t| t.format != first.format || t.summary_file != first.summary_file)
        {
            return Err(BenchError::BadOption {
                option: "-f".into(),
                why: format!(
                    "test {} changes summaryFormat or summaryFile: IOR writes one format to one place per run",
                    other.test_id
                ),
            });
        }
        Ok(checked)
    }
}

/// Applies a line of directives (`KEY=VALUE[,KEY=VALUE...]`, IOR's `-O` form).
pub fn apply_line(options: &mut IorOptions, line: &str) -> Result<(), String> {
    for directive in line.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        apply(options, directive)?;
    }
    Ok(())
}

/// Most tests (RUN lines) one script may hold.
pub const SCRIPT_TESTS_MAX: usize = 1000;

/// The tests of script `text`, the first starting from `base`. An error names its line (from
/// 1) and says what is wrong.
pub fn script(text: &str, base: &IorOptions) -> Result<Vec<IorOptions>, (usize, String)> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.split('#').next().unwrap_or("").trim()))
        .collect();
    let start = lines
        .iter()
        .position(|(_, l)| l.eq_ignore_ascii_case("IOR START"))
        .ok_or((
            1,
            "no \"IOR START\" line: an IOR script's tests sit between IOR START and IOR STOP"
                .to_owned(),
        ))?;
    // Each RUN runs the test as the lines so far have made it; the next starts from it (two
    // RUNs in a row run it twice, as in IOR).
    let mut current = base.clone();
    let mut tests = Vec::new();
    for &(number, line) in &lines[start + 1..] {
        if line.is_empty() {
            continue;
        }
        if line.eq_ignore_ascii_case("IOR STOP") {
            if tests.is_empty() {
                return Err((number, "the script has no RUN line".to_owned()));
            }
            return Ok(tests);
        }
        if line.eq_ignore_ascii_case("RUN") {
            if tests.len() == SCRIPT_TESTS_MAX {
                return Err((
                    number,
                    format!("more than {SCRIPT_TESTS_MAX} tests in one script"),
                ));
            }
            tests.push(current.clone());
            continue;
        }
        apply_line(&mut current, line).map_err(|why| (number, why))?;
    }
    Err((
        lines.len(),
        "no \"IOR STOP\" line: is the script whole?".to_owned(),
    ))
}

/// Applies one `KEY=VALUE` directive.
fn apply(o: &mut IorOptions, directive: &str) -> Result<(), String> {
    let (key, value) = directive
        .split_once('=')
        .map(|(k, v)| (k.trim(), v.trim()))
        .ok_or_else(|| format!("{directive:?} is not KEY=VALUE (as in blockSize=1m)"))?;
    let int = || -> Result<i64, String> {
        value
            .parse::<i64>()
            .map_err(|_| format!("{key}={value}: not a whole number"))
    };
    let count = || -> Result<u64, String> {
        u64::try_from(int()?).map_err(|_| format!("{key}={value}: must not be negative"))
    };
    let flag = || int().map(|v| v != 0);
    let size = || parse_size(value).map_err(|e| format!("{key}: {e}"));
    // Directives iopath accepts only at IOR's default: what they would change is not modeled.
    let only = |default: &str, why: &str| -> Result<(), String> {
        if value.eq_ignore_ascii_case(default) {
            Ok(())
        } else {
            Err(format!(
                "{key}={value}: {why} (only {key}={default} is accepted)"
            ))
        }
    };
    match key.to_ascii_lowercase().as_str() {
        "api" => o.api = value.to_owned(),
        "testfile" => o.test_file = value.to_owned(),
        "blocksize" => o.block_size_bytes = size()?,
        "transfersize" => o.transfer_size_bytes = size()?,
        "segmentcount" => o.segments = count()?,
        "numtasks" => {
            // IOR: 0 or -1 means every task the job has.
            o.tasks = match int()? {
                n if n <= 0 => None,
                n => Some(u32::try_from(n).map_err(|_| format!("{key}={value}: too many"))?),
            }
        }
        "repetitions" => {
            o.repetitions =
                u32::try_from(count()?).map_err(|_| format!("{key}={value}: too many"))?
        }
        "fileperproc" => o.file_per_proc = flag()?,
        "writefile" => o.write = flag()?,
        "readfile" => o.read = flag()?,
        "reordertasks" | "reordertasksconstant" => o.reorder_tasks = flag()?,
        "fsync" => o.fsync = flag()?,
        "fsyncperwrite" => o.fsync_per_write = flag()?,
        "randomoffset" => o.random_offset = flag()?,
        "useexistingtestfile" => o.use_existing_file = flag()?,
        "deadlineforstonewalling" => o.deadline_s = count()?,
        "maxtimeduration" => o.max_minutes = count()?,
        "intertestdelay" => o.inter_test_delay_s = count()?,
        "verbose" => {
            o.verbose = u8::try_from(count()?).map_err(|_| format!("{key}={value}: too many"))?
        }
        "intratestbarriers" => o.intra_test_barriers = flag()?,
        "collective" => o.collective = flag()?,
        "multifile" => o.multi_file = flag()?,
        "uniquedir" => o.unique_dir = flag()?,
        "singlexferattempt" => o.single_xfer_attempt = flag()?,
        "useo_direct" => o.direct_io = flag()?,
        "storefileoffset" => o.store_file_offset = flag()?,
        // IOR 3/4's spelling: offset (o) stamps offsets, timestamp (t) is the default.
        "datapackettype" => {
            o.store_file_offset = match value.to_ascii_lowercase().as_str() {
                "offset" | "o" => true,
                "timestamp" | "t" | "g" => false,
                _ => {
                    return Err(format!(
                        "{key}={value}: iopath writes its own pattern, which every read checks: \
                         offset or timestamp (incompressible and random data are not modeled)"
                    ));
                }
            }
        }
        "keepfile" => o.keep_file = flag()?,
        "summaryformat" => o.summary_format = value.to_owned(),
        "summaryfile" => {
            if value.is_empty() {
                return Err(format!("{key}= needs a file name"));
            }
            o.summary_file = Some(PathBuf::from(value));
        }
        // iopath reads back and checks every word it wrote, whatever these say.
        "checkwrite" | "checkread" => {
            flag()?;
        }
        // iopath stops at the first error either way.
        "quitonerror" => {
            flag()?;
        }
        // Free text IOR only prints.
        "platform" | "hintsfilename" => {}
        "taskpernodeoffset" => only(
            "1",
            "-C reads the data of the task one node over; other offsets are not modeled",
        )?,
        "reordertasksrandom" => only("0", "random task reordering is not modeled")?,
        "outlierthreshold" => only("0", "outlier warnings are not modeled")?,
        "setalignment" => only(
            "1",
            "alignment is an HDF5 setting; there is no HDF5 api here",
        )?,
        "individualdatasets" => only("0", "datasets are HDF5's; there is no HDF5 api here")?,
        "preallocate" => only(
            "0",
            "preallocation is MPI-IO's; there is no MPI-IO api here",
        )?,
        "usefileview" => only("0", "file views are MPI-IO's; there is no MPI-IO api here")?,
        "usesharedfilepointer" => only("0", "shared file pointers are MPI-IO's")?,
        "usestrideddatatype" => only("0", "strided datatypes are MPI-IO's")?,
        "keepfilewitherror" => only("0", "a run stops at the first error and removes its files")?,
        "settimestampsignature" => only(
            "0",
            "iopath's data pattern is its own (task, repetition, offset), checked on every read",
        )?,
        "showhints" => only("0", "there are no MPI-IO hints")?,
        "showhelp" => only("0", "run iopath bench ior --help")?,
        "memorypertask" | "memorypernode" => only("0", "memory hogging is not modeled")?,
        "stonewallingwearout" => o.stonewall_wear_out = flag()?,
        _ => {
            return Err(format!(
                "unknown directive {key:?} (see `iopath bench ior --help` and docs/ior.md for the keys iopath knows)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o_directives_set_their_options() {
        let mut o = IorOptions::default();
        apply_line(
            &mut o,
            "blockSize=4m, transferSize = 1.5m,randomOffset=1,summaryFormat=CSV",
        )
        .unwrap();
        assert_eq!(o.block_size_bytes, 4 << 20);
        assert_eq!(o.transfer_size_bytes, 3 << 19);
        assert!(o.random_offset);
        assert_eq!(o.summary_format, "CSV");
        apply_line(&mut o, "numTasks=0,summaryFile=/tmp/x.csv").unwrap();
        assert_eq!(o.tasks, None);
        assert_eq!(o.summary_file, Some(PathBuf::from("/tmp/x.csv")));
        for (bad, says) in [
            ("colour=red", "unknown directive"),
            ("blockSize", "not KEY=VALUE"),
            ("fsync=yes", "not a whole number"),
            ("useFileView=1", "MPI-IO"),
            ("segmentCount=-2", "negative"),
            ("dataPacketType=random", "every read checks"),
        ] {
            let error = apply_line(&mut o, bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
        apply_line(&mut o, "useFileView=0,collective=0,outlierThreshold=0").unwrap();
        apply_line(&mut o, "dataPacketType=offset").unwrap();
        assert!(o.store_file_offset, "IOR 3/4's spelling of storeFileOffset");
        apply_line(&mut o, "dataPacketType=t").unwrap();
        assert!(!o.store_file_offset);
    }

    #[test]
    fn a_script_runs_each_test_from_the_one_before() {
        let text = "\
# made by hand
IOR START
    api=POSIX
    blockSize=2m, transferSize=1m   # two on a line
    writeFile=1
    keepFile=1
RUN
    writeFile=0
    readFile=1
RUN
RUN
IOR STOP
ignored after the end
";
        let base = IorOptions {
            segments: 3,
            ..IorOptions::default()
        };
        let tests = script(text, &base).unwrap();
        assert_eq!(tests.len(), 3, "RUN RUN runs the test twice");
        assert!(tests[0].write && !tests[0].read && tests[0].keep_file);
        assert_eq!(tests[0].segments, 3, "the flags are the first test's start");
        assert_eq!(tests[0].api, "POSIX");
        assert!(!tests[1].write && tests[1].read, "{:?}", tests[1]);
        assert_eq!(tests[1].block_size_bytes, 2 << 20, "the rest is kept");
        assert_eq!(tests[2], tests[1]);
        // Lines after the last RUN make no test: nothing runs them.
        let tests = script("IOR START\nRUN\nblockSize=2m\nIOR STOP\n", &base).unwrap();
        assert_eq!(tests.len(), 1);
        assert_eq!(tests[0].block_size_bytes, base.block_size_bytes);
    }

    #[test]
    fn a_script_holds_a_bounded_number_of_tests() {
        let runs = "RUN\n".repeat(SCRIPT_TESTS_MAX + 1);
        let (line, why) = script(
            &format!("IOR START\n{runs}IOR STOP\n"),
            &IorOptions::default(),
        )
        .unwrap_err();
        assert_eq!(line, SCRIPT_TESTS_MAX + 2);
        assert!(why.contains("more than 1000 tests"), "{why}");
    }

    #[test]
    fn script_errors_name_their_line() {
        let base = IorOptions::default();
        assert_eq!(script("api=POSIX\nRUN\n", &base).unwrap_err().0, 1);
        let (line, why) = script(
            "IOR START\n  api=POSIX\n  colour=red\nRUN\nIOR STOP\n",
            &base,
        )
        .unwrap_err();
        assert_eq!(line, 3);
        assert!(why.contains("colour"), "{why}");
        let (_, why) = script("IOR START\n  api=POSIX\nRUN\n", &base).unwrap_err();
        assert!(why.contains("IOR STOP"), "{why}");
        let (line, why) = script("IOR START\n  api=POSIX\nIOR STOP\n", &base).unwrap_err();
        assert_eq!(line, 3);
        assert!(why.contains("no RUN"), "{why}");
    }
}

//! `pipeline-builder autograde`: Gradescope's autograder contract, offline. It reads the one
//! file a student uploaded, grades it against a scenario, and always writes a result: a
//! design that cannot be graded (no file, two files, bad JSON, an invalid design, an export
//! for another scenario) gets score 0 and the reason, never a crash. No server and no
//! database take part.
//!
//! The student's file is a bare design (docs/design-format.md) or the canvas's export,
//! `{"scenario": ID, "scenario_hash": …, "design": …}`, read by [`crate::design_file`] as
//! `POST /api/grade` reads it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value as Json};
use shared::{CheckError, Compiled, Scenario};

use crate::catalogue;
use crate::design_file;
use crate::report::{self, NotGraded};

/// Where Gradescope puts the student's upload and expects the result.
pub const SUBMISSION_DIR: &str = "/autograder/submission";
pub const RESULTS_FILE: &str = "/autograder/results/results.json";

/// The largest file read as a design; a design is a few kilobytes.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// How deep in the submission folder files are looked for (a zip's folder or two).
const MAX_DEPTH: usize = 4;

/// Gradescope's visibility settings.
pub const VISIBILITIES: [&str; 4] = ["hidden", "after_due_date", "after_published", "visible"];

#[derive(Clone, Debug)]
pub struct Options {
    /// The folder of the student's upload.
    pub submission: PathBuf,
    /// The folder of scenario files.
    pub scenarios: PathBuf,
    /// The scenario to grade against; without it, the one the export names.
    pub scenario: Option<String>,
    /// The result's `visibility` and `stdout_visibility`.
    pub visibility: String,
    pub stdout_visibility: String,
}

/// A result, and what to print for the course staff (Gradescope keeps stdout apart).
#[derive(Clone, Debug)]
pub struct Graded {
    pub results: Json,
    /// A line or two for the log: the verdict, or why there is none.
    pub log: String,
    /// True when the grader's setup, not the submission, kept it from being graded.
    pub setup_problem: bool,
}

/// Grades the submission and shapes the result. Never fails: every problem is a result.
pub fn grade(options: &Options) -> Graded {
    let started = Instant::now();
    let mut graded = grade_inner(options);
    if let Json::Object(map) = &mut graded.results {
        map.insert(
            "execution_time".into(),
            json!(started.elapsed().as_secs_f64().ceil() as u64),
        );
        map.insert("visibility".into(), json!(options.visibility));
        map.insert("stdout_visibility".into(), json!(options.stdout_visibility));
    }
    graded
}

/// The student's file, read and parsed; what it says is [`design_file::read`]'s.
struct Submitted {
    /// The file's name inside the submission folder.
    file: String,
    json: Json,
}

fn grade_inner(options: &Options) -> Graded {
    let mut extra = json!({"schedules_explored": 0});
    // The scenario the grader named is the assignment's: load it first, so that even a
    // submission that cannot be read lists the requirements it did not meet.
    let named = match &options.scenario {
        Some(id) => match catalogue::find(&options.scenarios, id) {
            Ok(s) => Some(s),
            Err(e) => return setup_problem(None, extra, format!("--scenario {id}: {e}")),
        },
        None => None,
    };
    let submitted = match read_submission(&options.submission) {
        Ok(s) => s,
        Err(why) => return not_graded(named.as_ref().map(|c| c.scenario()), &why, extra, None),
    };
    extra["file"] = json!(submitted.file);
    let upload = match design_file::read(&submitted.json) {
        Ok(u) => u,
        Err(damaged) => {
            let why = NotGraded::invalid(
                "the export is damaged",
                Some(&damaged.path),
                damaged.message,
            );
            return not_graded(
                named.as_ref().map(|c| c.scenario()),
                &why,
                extra,
                Some(&submitted.file),
            );
        }
    };
    let compiled = match scenario_of(options, named.as_ref(), &upload, &submitted.file, &extra) {
        Ok(s) => s,
        Err(graded) => return graded,
    };
    let scenario = compiled.scenario();
    let hash = shared::scenario_hash(scenario);
    extra["scenario"] = json!(scenario.id);
    extra["scenario_hash"] = json!(hash);
    let mut notes = Vec::new();
    if let Some(note) = design_file::stale_note(&upload, &scenario.id, &hash) {
        notes.push(note);
        extra["exported_scenario_hash"] = json!(upload.scenario_hash);
    }
    let valid = match shared::validate_json(&compiled, upload.design) {
        Ok(v) => v,
        Err(errors) => {
            let why = NotGraded::design(&errors, upload.at);
            let mut graded = not_graded(Some(scenario), &why, extra, Some(&submitted.file));
            graded.results = report::with_notes(graded.results, &notes);
            return graded;
        }
    };
    match shared::check_with(&compiled, &valid, shared::Limits::default()) {
        Ok(verdict) => {
            extra["schedules_explored"] = json!(verdict.schedules_explored);
            let results = report::gradescope(scenario, &verdict, extra);
            Graded {
                results: report::with_notes(results, &notes),
                log: format!(
                    "{}: {}",
                    submitted.file,
                    report::verdict_text(scenario, &verdict)
                ),
                setup_problem: false,
            }
        }
        Err(CheckError::TooLarge { schedules, limit }) => {
            let why = NotGraded::invalid(
                "the design is too large to check",
                None,
                format!("the check stopped after {schedules} failure schedules: it exceeds {limit}; simplify the design"),
            );
            not_graded(Some(scenario), &why, extra, Some(&submitted.file))
        }
        Err(CheckError::Design(errors)) => {
            let why = NotGraded::design(&errors, upload.at);
            not_graded(Some(scenario), &why, extra, Some(&submitted.file))
        }
    }
}

/// The scenario to grade the upload against ([`design_file::scenario_to_grade`]): the named
/// one, else the one an export names; or the result that says why there is none.
fn scenario_of(
    options: &Options,
    named: Option<&Compiled>,
    upload: &design_file::Upload<'_>,
    file: &str,
    extra: &Json,
) -> Result<Compiled, Graded> {
    let extra = extra.clone();
    let id = named.map(|c| c.scenario().id.as_str());
    match (design_file::scenario_to_grade(id, upload), named) {
        (Err(exported), Some(c)) => {
            let s = c.scenario();
            let why = NotGraded::invalid(
                "the export is for another scenario",
                Some("$.scenario"),
                design_file::other_scenario(exported, &s.id, &s.title),
            );
            Err(not_graded(Some(s), &why, extra, Some(file)))
        }
        (_, Some(s)) => Ok(s.clone()),
        (Ok(Some(exported)), None) => catalogue::find(&options.scenarios, exported).map_err(|_| {
            let why = NotGraded::invalid(
                "the scenario is unknown",
                Some("$.scenario"),
                format!("this file was exported from scenario \"{exported}\", which this assignment does not grade"),
            );
            not_graded(None, &why, extra.clone(), Some(file))
        }),
        (_, None) => Err(setup_problem(
            None,
            extra,
            format!(
                "{file} is a bare design, which names no scenario, and the autograder was given no --scenario; put --scenario ID in run_autograder"
            ),
        )),
    }
}

fn not_graded(
    scenario: Option<&Scenario>,
    why: &NotGraded,
    mut extra: Json,
    file: Option<&str>,
) -> Graded {
    if let Some(s) = scenario {
        extra["scenario"] = json!(s.id);
        extra["scenario_hash"] = json!(shared::scenario_hash(s));
    }
    extra["error"] = json!(why.text());
    Graded {
        results: report::gradescope_not_graded(scenario, why, extra),
        log: match file {
            Some(f) => format!("{f}: {}", why.text()),
            None => why.text(),
        },
        setup_problem: !why.submission_at_fault,
    }
}

fn setup_problem(scenario: Option<&Scenario>, extra: Json, message: String) -> Graded {
    let why = NotGraded {
        headline: "the autograder is not set up right".into(),
        problems: vec![report::Problem {
            path: None,
            message,
        }],
        submission_at_fault: false,
    };
    not_graded(scenario, &why, extra, None)
}

/// The one file of the submission folder, read and parsed.
fn read_submission(dir: &Path) -> Result<Submitted, NotGraded> {
    let mut files = Vec::new();
    if let Err(e) = list_files(dir, dir, 0, &mut files) {
        return Err(NotGraded::invalid(
            "there is no submission",
            None,
            format!(
                "the submission folder {} cannot be read: {e}",
                dir.display()
            ),
        ));
    }
    files.sort();
    let file = match files.as_slice() {
        [] => {
            return Err(NotGraded::invalid(
                "there is no design file",
                None,
                "the submission holds no file; upload the design you exported from the canvas (one .json file)",
            ))
        }
        [one] => one.clone(),
        many => {
            return Err(NotGraded::invalid(
                "the submission has more than one file",
                None,
                format!(
                    "the submission holds {} files ({}); upload only the one design you exported from the canvas",
                    many.len(),
                    many.join(", ")
                ),
            ))
        }
    };
    let path = dir.join(&file);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return Err(NotGraded::invalid(
            "the file is not a design",
            Some("$"),
            format!(
                "{file} has {size} bytes; a design has a few thousand (at most {MAX_FILE_BYTES})"
            ),
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| {
        NotGraded::invalid(
            "the file cannot be read",
            None,
            format!("{file} cannot be read: {e}"),
        )
    })?;
    let json: Json = serde_json::from_slice(&bytes).map_err(|e| {
        NotGraded::invalid(
            "the file is not valid JSON",
            Some("$"),
            format!("{file} is not valid JSON: {e}; upload the file the canvas's export saved, unchanged"),
        )
    })?;
    Ok(Submitted { file, json })
}

/// The files under `dir`, as paths relative to `root`; hidden files and folders (`.DS_Store`)
/// and macOS's `__MACOSX` folders are not the student's.
fn list_files(
    root: &Path,
    dir: &Path,
    depth: usize,
    found: &mut Vec<String>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || name == "__MACOSX" {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if depth < MAX_DEPTH {
                list_files(root, &path, depth + 1, found)?;
            }
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            found.push(relative.display().to_string());
        }
    }
    Ok(())
}

/// Writes the result, making its folder when missing.
pub fn write(results: &Json, file: &Path) -> std::io::Result<()> {
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut text = serde_json::to_string_pretty(results).map_err(std::io::Error::other)?;
    text.push('\n');
    std::fs::write(file, text)
}

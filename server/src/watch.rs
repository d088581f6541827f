//! The catalogue a running server serves, and `serve --watch`, which replaces it while the
//! server runs.
//!
//! A request takes the catalogue once, as an `Arc`, when it starts ([`LiveCatalogue::current`]),
//! so a request in flight finishes on the catalogue it started with while a newer one is
//! swapped in beside it. A reload validates every file of the folder as `serve` does at start,
//! file by file: every file that validates is served as it is now, and a broken edit never
//! reaches students: that file's last good version stays, marked stale, while every other
//! file reloads; the problems are kept for the log and the author page
//! ([`LiveCatalogue::status`]). Verdicts need no flushing: the verdict cache is
//! keyed by the scenario's hash, which every change of a scenario changes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use std::collections::BTreeMap;

use shared::authoring::{Diagnostic, Located};
use shared::Compiled;
use tokio::sync::mpsc;

use crate::catalogue::{self, Catalogue, Entry};

pub use shared::wire::author::{CatalogueStatus, Stale};

/// How long the folder must be quiet after a change before it is read again: an editor's save
/// is often several events (a temporary file, a rename, a change of times).
pub const SETTLE: Duration = Duration::from_millis(150);

/// The last good version of each file's scenario, kept while the file is broken.
#[derive(Clone, Debug)]
struct LastGood {
    scenario: Compiled,
    generation: u64,
}

/// A scenario file with problems, opened for its author as it is now: its text, each
/// problem at its place, and the scenario compiled when its parts fit together, so that a
/// design can be tried on it before the file validates.
#[derive(Debug)]
pub struct BrokenFile {
    /// The file's name in the folder, which the author page's URLs use.
    pub name: String,
    /// The file as the problems name it.
    pub file: String,
    /// The id and title the text gives, when it gives them.
    pub id: Option<String>,
    pub title: Option<String>,
    pub text: String,
    pub problems: Vec<Located>,
    /// The scenario as the file has it now, to try a design on; or why it cannot be.
    pub tryable: Result<Arc<Entry>, String>,
}

/// The catalogue being served, and what the last reading of its files found.
pub struct LiveCatalogue {
    current: RwLock<Arc<Catalogue>>,
    status: RwLock<Arc<CatalogueStatus>>,
    /// By file, the scenario last read from it without problems (reloads only).
    last_good: RwLock<BTreeMap<String, LastGood>>,
    /// By file name, the files with problems at the last reading.
    broken: RwLock<Arc<BTreeMap<String, Arc<BrokenFile>>>>,
}

impl LiveCatalogue {
    /// A catalogue read at start, without problems.
    pub fn new(catalogue: Catalogue) -> LiveCatalogue {
        LiveCatalogue {
            current: RwLock::new(Arc::new(catalogue)),
            status: RwLock::new(Arc::new(CatalogueStatus {
                generation: 1,
                reads: 1,
                read_at: now(),
                problems: Vec::new(),
                warnings: Vec::new(),
                stale: Vec::new(),
            })),
            last_good: RwLock::new(BTreeMap::new()),
            broken: RwLock::new(Arc::default()),
        }
    }

    /// The files with problems at the last reading, by file name.
    pub fn broken_files(&self) -> Arc<BTreeMap<String, Arc<BrokenFile>>> {
        Arc::clone(&self.broken.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn open_broken(&self, problems: &[Diagnostic]) {
        *self.broken.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(open_broken(problems));
    }

    /// The catalogue to serve a request with; it stays the same for that request whatever
    /// is swapped in meanwhile.
    pub fn current(&self) -> Arc<Catalogue> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn status(&self) -> Arc<CatalogueStatus> {
        Arc::clone(&self.status.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads and validates the folder again, file by file: every file that validates is
    /// served as it is now; a broken file's scenario stays at its last good version, marked
    /// stale; a file never valid is left out, its problems shown. Blocking: the validation
    /// simulates every design of every file.
    pub fn reload(&self, dir: &Path) -> Arc<CatalogueStatus> {
        let report = if dir.is_dir() {
            catalogue::check_paths(&[dir.to_path_buf()])
        } else {
            shared::authoring::CatalogueReport {
                problems: vec![Diagnostic {
                    file: dir.display().to_string(),
                    path: "$".into(),
                    message: "the scenarios folder does not exist".into(),
                }],
                ..Default::default()
            }
        };
        let before = self.status();
        let (scenarios, stale) = self.merge_last_good(&report, before.generation + 1);
        let next = Catalogue::new(scenarios);
        let changed = changes(&self.current(), &next);
        // A reading that changes no scenario (a broken file whose last good version stays)
        // swaps nothing in.
        let generation = if changed == NOTHING {
            before.generation
        } else {
            *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
            before.generation + 1
        };
        for p in &report.problems {
            tracing::warn!(file = %p.file, path = %p.path, "{}", p.message);
        }
        self.open_broken(&report.problems);
        for s in &stale {
            tracing::warn!(file = %s.file, id = %s.id, "the file has problems; still serving its last good version (stale, read in catalogue #{})", s.since_generation);
        }
        tracing::info!(
            scenarios = self.current().len(),
            changed = %changed,
            problems = report.problems.len(),
            stale = stale.len(),
            "the scenario files were read again; serving catalogue #{generation}"
        );
        let status = CatalogueStatus {
            generation,
            reads: before.reads + 1,
            read_at: now(),
            problems: report.problems,
            warnings: report.warnings,
            stale,
        };
        for w in &status.warnings {
            tracing::warn!(file = %w.file, path = %w.path, "{}", w.message);
        }
        let status = Arc::new(status);
        *self.status.write().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&status);
        status
    }

    /// Notes which file each scenario being served came from, so that when a file breaks
    /// later its scenario stays at this version. `spawn` calls it before the first change.
    pub fn remember_files(&self, dir: &Path) {
        let report = catalogue::check_paths(&[dir.to_path_buf()]);
        let current = self.current();
        let generation = self.status().generation;
        let mut last_good = self.last_good.write().unwrap_or_else(|e| e.into_inner());
        for (file, scenario) in report.files.iter().zip(&report.scenarios) {
            if let Some(entry) = current.get(&scenario.scenario().id) {
                last_good.insert(
                    file.clone(),
                    LastGood {
                        scenario: entry.compiled.clone(),
                        generation,
                    },
                );
            }
        }
    }

    /// The scenarios to serve after a reading: those that validated, and for each broken file
    /// its last good version unless a valid file now has its id. Remembers the new last good
    /// versions.
    fn merge_last_good(
        &self,
        report: &shared::authoring::CatalogueReport,
        generation: u64,
    ) -> (Vec<Compiled>, Vec<Stale>) {
        let mut last_good = self.last_good.write().unwrap_or_else(|e| e.into_inner());
        let broken: std::collections::BTreeSet<&str> =
            report.problems.iter().map(|p| p.file.as_str()).collect();
        let mut scenarios = report.scenarios.clone();
        let mut stale = Vec::new();
        let mut kept = BTreeMap::new();
        for (file, good) in last_good.iter() {
            let id = &good.scenario.scenario().id;
            let taken = scenarios.iter().any(|s| &s.scenario().id == id);
            if broken.contains(file.as_str()) && !taken {
                scenarios.push(good.scenario.clone());
                stale.push(Stale {
                    id: id.clone(),
                    file: file.clone(),
                    since_generation: good.generation,
                });
                kept.insert(file.clone(), good.clone());
            }
        }
        for (file, scenario) in report.files.iter().zip(&report.scenarios) {
            kept.insert(
                file.clone(),
                LastGood {
                    scenario: scenario.clone(),
                    generation,
                },
            );
        }
        *last_good = kept;
        scenarios.sort_by(|a, b| {
            let (a, b) = (a.scenario(), b.scenario());
            a.order.cmp(&b.order).then(a.id.cmp(&b.id))
        });
        (scenarios, stale)
    }

    /// A server started under `--watch` on a folder with problems: nothing to serve yet, and
    /// the problems to show until they are fixed.
    pub fn broken(problems: Vec<Diagnostic>) -> LiveCatalogue {
        let live = LiveCatalogue::new(Catalogue::default());
        live.open_broken(&problems);
        *live.status.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(CatalogueStatus {
            generation: 0,
            problems,
            ..(*live.status()).clone()
        });
        live
    }
}

/// Each file the problems name, opened: read again, its problems placed in its text, its
/// scenario compiled when it can be. A problem of the folder itself names no file.
fn open_broken(problems: &[Diagnostic]) -> BTreeMap<String, Arc<BrokenFile>> {
    let mut by_file: BTreeMap<&str, Vec<Diagnostic>> = BTreeMap::new();
    for p in problems {
        by_file.entry(p.file.as_str()).or_default().push(p.clone());
    }
    let mut opened = BTreeMap::new();
    for (file, found) in by_file {
        let path = Path::new(file);
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        // A file too large to read is named by its problem alone.
        let text = match std::fs::metadata(path) {
            Ok(m) if m.is_file() && m.len() <= catalogue::MAX_SCENARIO_FILE_BYTES => {
                std::fs::read_to_string(path).unwrap_or_default()
            }
            _ => String::new(),
        };
        let raw = serde_json::from_str::<serde_json::Value>(&text).ok();
        let field = |name: &str| {
            raw.as_ref()
                .and_then(|r| r.get(name))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let tryable = shared::authoring::tryable(&text)
            .map(|compiled| Arc::clone(&Catalogue::new(vec![compiled]).entries()[0]));
        opened.insert(
            name.to_string(),
            Arc::new(BrokenFile {
                name: name.to_string(),
                file: file.to_string(),
                id: field("id"),
                title: field("title"),
                problems: shared::authoring::locate(&text, &found),
                text,
                tryable,
            }),
        );
    }
    opened
}

const NOTHING: &str = "nothing";

/// The scenarios added, changed and removed between two catalogues, in words for the log.
fn changes(before: &Catalogue, after: &Catalogue) -> String {
    let mut words = Vec::new();
    for entry in after.entries() {
        match before.get(&entry.scenario().id) {
            None => words.push(format!("+{}", entry.scenario().id)),
            Some(old) if old.hash != entry.hash => words.push(format!("~{}", entry.scenario().id)),
            Some(_) => {}
        }
    }
    for entry in before.entries() {
        if after.get(&entry.scenario().id).is_none() {
            words.push(format!("-{}", entry.scenario().id));
        }
    }
    if words.is_empty() {
        NOTHING.into()
    } else {
        words.join(" ")
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Watches `dir` and reloads `live` after each change of a scenario file, until the server
/// stops. Fails only when the folder cannot be watched.
pub fn spawn(
    live: Arc<LiveCatalogue>,
    dir: PathBuf,
) -> Result<tokio::task::JoinHandle<()>, String> {
    use notify::Watcher;
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    let mut watcher =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            // Reading a file is an event too (the reload itself reads every file): only a
            // change counts.
            Ok(event)
                if !matches!(event.kind, notify::EventKind::Access(_))
                    && event.paths.iter().any(|p| is_watched(p)) =>
            {
                let _ = tx.send(());
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("watching the scenario files: {e}"),
        })
        .map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
    watcher
        .watch(&dir, notify::RecursiveMode::NonRecursive)
        .map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
    tracing::info!(dir = %dir.display(), "watching the scenario files");
    Ok(tokio::spawn(async move {
        // The watcher lives as long as this task.
        let _watcher = watcher;
        {
            let (live, dir) = (Arc::clone(&live), dir.clone());
            if let Err(e) = tokio::task::spawn_blocking(move || live.remember_files(&dir)).await {
                tracing::error!("reading the scenario files stopped: {e}");
            }
        }
        while rx.recv().await.is_some() {
            // Let the burst of events of one save settle.
            loop {
                match tokio::time::timeout(SETTLE, rx.recv()).await {
                    Ok(Some(())) => continue,
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            let (live, dir) = (Arc::clone(&live), dir.clone());
            if let Err(e) = tokio::task::spawn_blocking(move || live.reload(&dir)).await {
                tracing::error!("reloading the scenario files stopped: {e}");
            }
        }
    }))
}

/// A change of these paths may change the catalogue: scenario files, not editors' swap files
/// or the schema.
fn is_watched(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
        && !path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".schema.json") || n.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scenario_files_are_watched() {
        assert!(is_watched(Path::new("scenarios/safe-retry.json")));
        assert!(!is_watched(Path::new("scenarios/scenario.schema.json")));
        assert!(!is_watched(Path::new("scenarios/.safe-retry.json.swp")));
        assert!(!is_watched(Path::new("scenarios/.#safe-retry.json")));
        assert!(!is_watched(Path::new("scenarios/4913")));
    }
}

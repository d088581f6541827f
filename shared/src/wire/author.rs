//! The author page's view of the scenario files (`serve --author`): what the last reading of
//! the files found, each scenario with its designs' verdicts, and a file with problems as it
//! is now.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::authoring::{Diagnostic, Located};

/// What the last reading of the scenario files found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CatalogueStatus {
    /// The catalogue being served: 1 for the one read at start, one more at each swap.
    pub generation: u64,
    /// How many times the files were read, the first time included.
    pub reads: u64,
    /// When the files were last read (RFC 3339, UTC).
    pub read_at: String,
    /// The problems of the files as they are now. When there is any, the catalogue being
    /// served is the last one without problems (or, if the server started on a broken
    /// folder under `--watch`, an empty one).
    pub problems: Vec<Diagnostic>,
    /// Warnings of the files as they are now; they never keep a file out.
    pub warnings: Vec<Diagnostic>,
    /// The scenarios still served at their last good version because their file now has
    /// problems.
    #[serde(default)]
    pub stale: Vec<Stale>,
}

/// A scenario served at its last good version while its file is broken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stale {
    pub id: String,
    pub file: String,
    /// The generation of the catalogue in which this version was last read without problems.
    pub since_generation: u64,
}

/// `GET /api/author/status`: what the last reading of the files found, and the scenarios
/// being served.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    #[serde(flatten)]
    pub files: CatalogueStatus,
    pub scenarios: Vec<ScenarioLine>,
    /// The files with problems, each openable on the author page.
    #[serde(default)]
    pub broken: Vec<BrokenLine>,
}

impl Status {
    /// The file with problems that the author page of scenario `id` opens: the file that
    /// gives that id, or, when its text gives none, the file named after it.
    pub fn broken_file(&self, id: &str) -> Option<&BrokenLine> {
        self.broken
            .iter()
            .find(|b| b.id.as_deref() == Some(id))
            .or_else(|| self.broken.iter().find(|b| b.name == format!("{id}.json")))
    }
}

/// A file with problems, as the author page lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BrokenLine {
    /// The file's name, for `GET /api/author/files/{name}`.
    pub name: String,
    pub id: Option<String>,
    pub title: Option<String>,
    pub problems: usize,
    /// Whether a design can be tried on the file as it is now.
    pub tryable: bool,
}

/// A scenario being served.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioLine {
    pub id: String,
    pub title: String,
    pub order: u32,
    pub hash: String,
    pub reference_designs: usize,
    pub wrong_designs: usize,
}

/// `GET /api/author/scenarios/{id}`: the whole scenario and each of its designs' verdicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuthorScenario {
    pub hash: String,
    /// The scenario file as the server read it, answers included.
    pub scenario: Json,
    pub designs: Vec<AuthorDesign>,
}

/// A reference or wrong design of a scenario, with the server's verdict of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuthorDesign {
    /// `reference` (must pass every requirement) or `wrong` (must miss `misses`).
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<String>,
    pub design: Json,
    /// The server's verdict of the design, as `POST /api/scenarios/{id}/check` gives it.
    pub verdict: Json,
}

/// `GET /api/author/files/{name}`: a file with problems as it is now: its text, each problem
/// at its path, line and column, and the scenario to try a design on when its parts fit
/// together (or why they do not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuthorFile {
    pub name: String,
    pub file: String,
    pub id: Option<String>,
    pub text: String,
    pub problems: Vec<Located>,
    /// The scenario as the file has it now, whole, when a design can be tried on it.
    pub scenario: Option<Json>,
    pub hash: Option<String>,
    pub why_not_tryable: Option<String>,
}

//! The author page (`serve --author`): the scenario files' problems as they change, every
//! scenario with its reference and wrong designs drawn read-only with their verdicts and
//! replays, and a canvas to try a design without recording an attempt.
//!
//! It asks the server for the files' state every [`POLL`]; a scenario open on the page is
//! fetched again when its hash changes, so an edit saved in the author's editor shows here
//! within a second or two of the server serving it.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use leptos::prelude::*;
use shared::design::{design_from_json, Design};

use super::api::{author, ApiError};
use super::drafts::Loaded;
use super::editor::Workspace;
use super::page::Mode;
use super::router::Link;

/// How often the page asks the server what the files hold.
const POLL: Duration = Duration::from_millis(1000);

/// The files' state, asked for now and every [`POLL`] while the page is open.
fn follow_status() -> RwSignal<Option<Result<author::Status, ApiError>>> {
    let status = RwSignal::new(None);
    let ask = move || {
        leptos::task::spawn_local(async move {
            let answer = author::status().await;
            // Only a change re-draws the page.
            if status.try_with_untracked(|s| s.as_ref() != Some(&answer)) == Some(true) {
                status.try_set(Some(answer));
            }
        })
    };
    ask();
    if let Ok(handle) = set_interval_with_handle(ask, POLL) {
        on_cleanup(move || handle.clear());
    }
    status
}

/// What a refusal of the author API means: most often, a server started without `--author`.
fn unavailable(e: &ApiError) -> impl IntoView {
    let why = if e.offline {
        "The server cannot be reached.".to_string()
    } else {
        format!("The server did not answer the author page ({}). Start it with --author, for example: pipeline-builder serve --watch --author", e.message)
    };
    view! { <p class="error" role="alert">{why}</p> }
}

/// The problems of the files, or that every file validates.
fn problems_view(status: &author::Status) -> impl IntoView {
    let warnings = (!status.warnings.is_empty()).then(|| {
        view! {
            <h3>"Warnings"</h3>
            <ul class="diagnostics">{status.warnings.iter().map(|w| view! { <li><code>{w.to_string()}</code></li> }).collect_view()}</ul>
        }
    });
    let read = status
        .read_at
        .get(11..19)
        .unwrap_or(&status.read_at)
        .to_string();
    if status.problems.is_empty() {
        view! {
            <section class="files ok" aria-labelledby="files-heading">
                <h2 id="files-heading">"Every file validates"</h2>
                <p class="muted">{format!("Read at {read} UTC; catalogue #{} is what students get.", status.generation)}</p>
                {warnings}
            </section>
        }
        .into_any()
    } else {
        let n = status.problems.len();
        let stale = (!status.stale.is_empty()).then(|| {
            view! {
                <h3>"Stale: served at their last good version"</h3>
                <ul class="stale">{status.stale.iter().map(|s| view! {
                    <li><code>{s.id.clone()}</code>{format!(" ({}): students get the version read in catalogue #{} until the file is fixed", s.file, s.since_generation)}</li>
                }).collect_view()}</ul>
            }
        });
        view! {
            <section class="files broken" aria-labelledby="files-heading">
                <h2 id="files-heading">{format!("{n} problem{} in the files", if n == 1 { "" } else { "s" })}</h2>
                <p>{format!("Read at {read} UTC. Every file without problems is served as it is now (catalogue #{}); a broken file's scenario stays at its last good version until it is fixed.", status.generation)}</p>
                {stale}
                <ul class="diagnostics">{status.problems.iter().map(|p| view! { <li><code>{p.to_string()}</code></li> }).collect_view()}</ul>
                {warnings}
            </section>
        }
        .into_any()
    }
}

/// `/author`: the files' state and the scenarios being served.
#[component]
pub fn AuthorHome() -> impl IntoView {
    let status = follow_status();
    view! {
        <section class="page author">
            <h1>"Author page"</h1>
            <p class="muted">"Edit a scenario file and save it: the server reads the folder again, and this page follows. Open a scenario to see its designs' verdicts and replays, or to try a design."</p>
            <div aria-live="polite">
                {move || match status.get() {
                    None => view! { <p class="muted" role="status">"Reading the files…"</p> }.into_any(),
                    Some(Err(e)) => unavailable(&e).into_any(),
                    Some(Ok(s)) => view! {
                        {problems_view(&s)}
                        <h2>"Scenarios"</h2>
                        <table class="author-scenarios">
                            <thead><tr><th scope="col">"Scenario"</th><th scope="col">"Id"</th><th scope="col">"Reference designs"</th><th scope="col">"Wrong designs"</th></tr></thead>
                            <tbody>{s.scenarios.into_iter().map(|line| view! {
                                <tr>
                                    <td><Link href=format!("/author/{}", line.id)>{line.title}</Link></td>
                                    <td><code>{line.id}</code></td>
                                    <td>{line.reference_designs}</td>
                                    <td>{line.wrong_designs}</td>
                                </tr>
                            }).collect_view()}</tbody>
                        </table>
                    }.into_any(),
                }}
            </div>
        </section>
    }
}

/// What the canvas shows on a scenario's author page.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shown {
    /// One of the file's designs (its index in the answer), read-only.
    Design(usize),
    /// A design being tried, from the starting design.
    Try,
}

/// `/author/{id}`: the scenario's designs with their verdicts, and a design to try.
#[component]
pub fn AuthorScenario(id: String) -> impl IntoView {
    let status = follow_status();
    let loaded = RwSignal::new_local(None::<Result<Rc<author::Scenario>, ApiError>>);
    let shown = RwSignal::new(Shown::Design(0));
    // Fetched at first, and again whenever the server serves another version of the file.
    let key = id.clone();
    Effect::new(move |seen: Option<Option<String>>| {
        let hash = status.with(|s| match s {
            Some(Ok(s)) => s
                .scenarios
                .iter()
                .find(|l| l.id == key)
                .map(|l| l.hash.clone()),
            _ => None,
        });
        // At first; then only when a hash the page knew changes (the first status names the
        // hash of what was just fetched).
        let first = seen.is_none();
        let before = seen.flatten();
        if first || (before.is_some() && hash.is_some() && before != hash) {
            let id = key.clone();
            leptos::task::spawn_local(async move {
                let answer = author::scenario(&id).await.map(Rc::new);
                loaded.try_set(Some(answer));
            });
        }
        hash
    });
    let files = move || {
        status.with(|s| {
            s.as_ref()
                .and_then(|s| s.as_ref().ok())
                .filter(|s| !s.problems.is_empty())
                .map(problems_view)
        })
    };
    view! {
        <div class="author-scenario">
            <nav class="author-bar" aria-label="The scenario's designs">
                <Link href="/author".to_string()>"← Author page"</Link>
                {move || match loaded.get() {
                    None => view! { <span class="muted" role="status">"Loading…"</span> }.into_any(),
                    Some(Err(e)) => unavailable(&e).into_any(),
                    Some(Ok(a)) => design_buttons(&a, shown).into_any(),
                }}
            </nav>
            {files}
            {move || match (loaded.get(), shown.get()) {
                (Some(Ok(a)), shown) => workspace(&a, shown).into_any(),
                _ => ().into_any(),
            }}
            <SolvePanel id=id.clone()/>
        </div>
    }
}

/// The scenario's palette solved on the server when the author asks: every design checked,
/// and the summary `scenarios solve` prints.
#[component]
fn SolvePanel(id: String) -> impl IntoView {
    let answer = RwSignal::new_local(None::<Result<String, ApiError>>);
    let running = RwSignal::new(false);
    let solve = move |_| {
        running.set(true);
        let id = id.clone();
        leptos::task::spawn_local(async move {
            let solved = author::solve(&id).await.map(|s| s.summary);
            answer.try_set(Some(solved));
            running.try_set(false);
        });
    };
    view! {
        <section class="author-solve" aria-labelledby="solve-heading">
            <h2 id="solve-heading">"Every design the palette allows"</h2>
            <p class="muted">"Checks every design the palette and the wiring rules allow: which pass, how many miss each requirement, and which requirements and failures change nothing."</p>
            <button class="solve" on:click=solve disabled=move || running.get()>"Solve the palette"</button>
            <div aria-live="polite">
                {move || match answer.get() {
                    None if running.get() => view! { <p class="muted" role="status">"Solving…"</p> }.into_any(),
                    None => ().into_any(),
                    Some(Ok(text)) => view! { <pre class="solve-summary">{text}</pre> }.into_any(),
                    Some(Err(e)) => view! { <p class="error" role="alert">{e.message}</p> }.into_any(),
                }}
            </div>
        </section>
    }
}

/// A button per design, saying whether its verdict is what the file says it must be.
fn design_buttons(a: &author::Scenario, shown: RwSignal<Shown>) -> impl IntoView {
    let buttons = a
        .designs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let (words, as_meant) = design_words(d);
            let label = format!(
                "{} design \"{}\": {words}",
                if d.kind == "reference" {
                    "Reference"
                } else {
                    "Wrong"
                },
                d.name
            );
            view! {
                <button class="design-pick" class:as-meant=as_meant class:not-as-meant=!as_meant
                    aria-pressed=move || (shown.get() == Shown::Design(i)).to_string()
                    title=label.clone()
                    on:click=move |_| shown.set(Shown::Design(i))>
                    <span class="design-kind">{if d.kind == "reference" { "Reference" } else { "Wrong" }}</span>
                    " "{d.name.clone()}
                    <span class="design-words">{words}</span>
                </button>
            }
        })
        .collect_view();
    view! {
        {buttons}
        <button class="design-pick try" aria-pressed=move || (shown.get() == Shown::Try).to_string()
            on:click=move |_| shown.set(Shown::Try)>"Try a design"</button>
    }
}

/// What a design's verdict says against what the file says it must be, and whether they agree.
fn design_words(d: &author::NamedDesign) -> (String, bool) {
    let missed: Vec<&str> = d
        .verdict
        .requirements
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.id.as_str())
        .collect();
    if d.kind == "reference" {
        if missed.is_empty() {
            ("passes every requirement".into(), true)
        } else {
            (
                format!(
                    "misses {} — a reference design must pass",
                    missed.join(", ")
                ),
                false,
            )
        }
    } else {
        let unmissed: Vec<&str> = d
            .misses
            .iter()
            .map(String::as_str)
            .filter(|m| !missed.contains(m))
            .collect();
        if unmissed.is_empty() {
            (format!("misses {}", missed.join(", ")), true)
        } else {
            (
                format!("should miss {} but passes it", unmissed.join(", ")),
                false,
            )
        }
    }
}

/// The canvas with the chosen design and its verdict, or a design to try.
fn workspace(a: &author::Scenario, shown: Shown) -> impl IntoView {
    let Ok(scenario) = crate::student_view::compiled(a.scenario.clone()) else {
        return view! { <p class="error" role="alert">"The server's scenario could not be read."</p> }.into_any();
    };
    let start = scenario
        .scenario()
        .starting_design
        .as_ref()
        .and_then(|j| design_from_json(j).ok())
        .unwrap_or(Design {
            nodes: Vec::new(),
            edges: Vec::new(),
        });
    let back = ("/author".to_string(), "← Author page");
    let scenario = Arc::new(scenario);
    let (design, verdict, mode) = match shown {
        Shown::Try => (start.clone(), None, Mode::Try),
        Shown::Design(i) => {
            let Some(named) = a.designs.get(i) else {
                return ().into_any();
            };
            let Ok(design) = design_from_json(&named.design) else {
                return view! { <p class="error" role="alert">"This design could not be read."</p> }.into_any();
            };
            (
                design.clone(),
                Some((named.verdict.clone(), design)),
                Mode::ReadOnly,
            )
        }
    };
    let loaded = Rc::new(Loaded {
        scenario,
        start,
        design,
        restored: None,
        verdict,
    });
    view! { <Workspace loaded=loaded mode=mode back=back /> }.into_any()
}

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
use shared::wire::author::CatalogueStatus;

use super::api::{author, ApiError};
use super::drafts::Loaded;
use super::editor::Workspace;
use super::page::{Mode, TryOn};
use super::router::Link;
use crate::student_view::StudentScenario;

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
fn problems_view(status: &CatalogueStatus) -> impl IntoView {
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
                        {problems_view(&s.files)}
                        {broken_list(&s)}
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

/// The files with problems, each a link to its page, where it opens as it is now.
fn broken_list(status: &author::Status) -> impl IntoView {
    let broken = status.broken.clone();
    (!broken.is_empty()).then(move || {
        view! {
            <h2>"Files that do not validate"</h2>
            <ul class="broken-files">{broken.into_iter().map(|b| {
                let key = b.id.clone().unwrap_or_else(|| b.name.trim_end_matches(".json").to_string());
                let n = b.problems;
                let shown = b.title.clone().unwrap_or_else(|| b.name.clone());
                let what = format!(
                    "{n} problem{}; {}",
                    if n == 1 { "" } else { "s" },
                    if b.tryable { "a design can be tried on it" } else { "no design can be tried on it yet" }
                );
                view! {
                    <li><Link href=format!("/author/{key}")>{shown}</Link>
                        " "<code>{b.name}</code>" — "{what}</li>
                }
            }).collect_view()}</ul>
        }
    })
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
    let id_for_file = id.clone();
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
                .filter(|s| !s.files.problems.is_empty())
                .map(|s| problems_view(&s.files))
        })
    };
    // The file of this scenario, when it has problems now: opened as it is.
    let broken = Memo::new(move |_| {
        status.with(|s| match s {
            Some(Ok(s)) => s
                .broken_file(&id_for_file)
                .map(|b| (b.name.clone(), s.files.reads)),
            _ => None,
        })
    });
    view! {
        <div class="author-scenario">
            <nav class="author-bar" aria-label="The scenario's designs">
                <Link href="/author".to_string()>"← Author page"</Link>
                {move || match (broken.get(), loaded.get()) {
                    (Some(_), _) => ().into_any(),
                    (None, None) => view! { <span class="muted" role="status">"Loading…"</span> }.into_any(),
                    (None, Some(Err(e))) => unavailable(&e).into_any(),
                    (None, Some(Ok(a))) => design_buttons(&a, shown).into_any(),
                }}
            </nav>
            {files}
            {move || match (broken.get(), loaded.get(), shown.get()) {
                (Some((name, _)), _, _) => view! { <BrokenFile name=name/> }.into_any(),
                (None, Some(Ok(a)), shown) => workspace(&a, shown).into_any(),
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
    // The page opens only when every design's verdict reads (`author::scenario`).
    let missed: Vec<String> = author::verdict(d)
        .map(|v| {
            v.requirements
                .into_iter()
                .filter(|r| !r.passed)
                .map(|r| r.id)
                .collect()
        })
        .unwrap_or_default();
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
            .filter(|m| !missed.iter().any(|x| x == m))
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

/// The design a try starts from: the scenario's starting design, or an empty drawing.
fn starting_design(scenario: &shared::Scenario) -> Design {
    scenario
        .starting_design
        .as_ref()
        .and_then(|j| design_from_json(j).ok())
        .unwrap_or(Design {
            nodes: Vec::new(),
            edges: Vec::new(),
        })
}

/// The canvas with the chosen design and its verdict, or a design to try.
fn workspace(a: &author::Scenario, shown: Shown) -> impl IntoView {
    let Ok(scenario) = StudentScenario::read(a.scenario.clone()) else {
        return view! { <p class="error" role="alert">"The server's scenario could not be read."</p> }.into_any();
    };
    let start = starting_design(scenario.scenario());
    let back = ("/author".to_string(), "← Author page");
    let scenario = Arc::new(scenario);
    let (design, verdict, mode) = match shown {
        Shown::Try => (start.clone(), None, Mode::Try),
        Shown::Design(i) => {
            let Some(named) = a.designs.get(i) else {
                return ().into_any();
            };
            let (Ok(design), Some(verdict)) =
                (design_from_json(&named.design), author::verdict(named))
            else {
                return view! { <p class="error" role="alert">"This design could not be read."</p> }.into_any();
            };
            (design.clone(), Some((verdict, design)), Mode::ReadOnly)
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

/// A scenario file with problems, opened as it is now: each problem at its path and line,
/// the text with those lines marked, and a design to try when the scenario's parts fit
/// together. Fetched again at each reading of the files while the page is open.
#[component]
fn BrokenFile(name: String) -> impl IntoView {
    let opened = RwSignal::new_local(None::<Result<Rc<author::File>, ApiError>>);
    {
        let name = name.clone();
        leptos::task::spawn_local(async move {
            let answer = author::file(&name).await.map(Rc::new);
            opened.try_set(Some(answer));
        });
    }
    view! {
        <section class="broken-file" aria-labelledby="broken-file-heading">
            <h2 id="broken-file-heading">{format!("{name} does not validate")}</h2>
            {move || match opened.get() {
                None => view! { <p class="muted" role="status">"Opening the file…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error" role="alert">{e.message}</p> }.into_any(),
                Some(Ok(file)) => opened_file(&file).into_any(),
            }}
        </section>
    }
}

/// The problems, the text and the try of an opened file.
fn opened_file(file: &author::File) -> impl IntoView {
    let problems = file
        .problems
        .iter()
        .map(|p| {
            view! {
                <li class="file-problem">
                    <a href=format!("#file-line-{}", p.line)>{format!("line {}, column {}", p.line, p.column)}</a>
                    " "<code class="path">{p.path.clone()}</code>": "{p.message.clone()}
                </li>
            }
        })
        .collect_view();
    let marked: std::collections::BTreeSet<usize> = file.problems.iter().map(|p| p.line).collect();
    let lines = file
        .text
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let n = i + 1;
            view! {
                <span id=format!("file-line-{n}") class="file-line" class:problem-line=marked.contains(&n)>
                    <span class="line-number" aria-hidden="true">{n}</span>{format!("{line}\n")}
                </span>
            }
        })
        .collect_view();
    let tried = match (&file.scenario, &file.why_not_tryable) {
        (Some(scenario), _) => try_on_file(&file.name, scenario.clone()).into_any(),
        (None, why) => view! {
            <p class="muted">{why.clone().unwrap_or_else(|| "No design can be tried on the file as it is.".into())}</p>
        }
        .into_any(),
    };
    view! {
        <ul class="diagnostics file-problems">{problems}</ul>
        <details class="file-text-box" open=true>
            <summary>"The file as it is now"</summary>
            <pre class="file-text" tabindex="0" aria-label="The file's text, with the lines that have problems marked"><code>{lines}</code></pre>
        </details>
        <h3>"Try a design on the file as it is now"</h3>
        {tried}
    }
}

/// A design tried on the scenario a file with problems gives: checked on that file, not on
/// the version students get.
fn try_on_file(name: &str, scenario: serde_json::Value) -> impl IntoView {
    // Only a file that compiles can be tried: the preview's engine compiles it.
    let Ok(scenario) = StudentScenario::read(scenario)
        .and_then(|s| crate::student_view::compile(&s.text()).map(|_| s))
    else {
        return view! { <p class="error" role="alert">"The file's scenario could not be read."</p> }.into_any();
    };
    let start = starting_design(scenario.scenario());
    provide_context(TryOn(name.to_string()));
    let loaded = Rc::new(Loaded {
        scenario: Arc::new(scenario),
        design: start.clone(),
        start,
        restored: None,
        verdict: None,
    });
    let back = ("/author".to_string(), "← Author page");
    view! { <Workspace loaded=loaded mode=Mode::Try back=back /> }.into_any()
}

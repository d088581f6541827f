//! The server's verdict: every requirement with ✓ or ✗, and for a missed one what happened,
//! the trace, expected against actual (with the table diff when the requirement compares a
//! whole table), the tables, a hint, and a replay on the drawing.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use leptos::prelude::*;
use shared::verdict::{RequirementVerdict, RowStatus, TableDiff, TableView, TraceEntry};
use wasm_bindgen::JsCast;

use super::debounce::Debounce;
use super::diff_view::TableDiffView;
use super::dom::{icon, BACK, NEXT, PAUSE, PLAY};
use super::page::{Page, Replay};
use crate::canvas::same_meaning;
use crate::problems::{plain, problem_words};
use crate::replay::{cell_text, outcome_class};

#[component]
pub fn ResultsPanel() -> impl IntoView {
    let page = expect_context::<Page>();
    // Only a change of meaning makes a verdict stale: moving nodes changes no verdict.
    let stale = move || {
        page.editor.with(|e| {
            page.checked_design
                .with(|c| c.as_ref().is_some_and(|c| !same_meaning(c, e.design())))
        })
    };
    view! {
        <div class="results" aria-live="polite">
            {move || page.check_error.get().map(|e| view! {
                <div class="error" role="alert">
                    <p title=e.message.clone()>{if e.details.is_empty() {
                        format!("The check did not run: {}", plain(&e.message))
                    } else {
                        "The check did not run. To finish the design:".to_string()
                    }}</p>
                    <ul>{e.details.into_iter().map(|d| {
                        let (words, raw) = page.editor.with_untracked(|e| page.scenario.with_value(|s| (problem_words(s.scenario(), e.design(), &d), d.to_string())));
                        view! { <li title=raw>{words}</li> }
                    }).collect_view()}</ul>
                </div>
            })}
            {move || match page.verdict.get() {
                None => view! {
                    <p class="muted">"Press "<strong>"Check"</strong>" to run your design under every failure this scenario allows. The server's verdict is graded and kept as an attempt."</p>
                }.into_any(),
                Some(verdict) => {
                    let summary = if verdict.passed {
                        format!("Every requirement is met — {} of {}. {} failure schedules explored.", verdict.score, verdict.max_score, verdict.schedules_explored)
                    } else {
                        format!("{} of {} requirements met. {} failure schedules explored.", verdict.score, verdict.max_score, verdict.schedules_explored)
                    };
                    view! {
                        <p class=if verdict.passed { "verdict-summary passed" } else { "verdict-summary missed" } role="status">{summary}</p>
                        <Show when=stale><p class="stale">"Your design changed since this Check."</p></Show>
                        <ol class="result-list">
                            {verdict.requirements.into_iter().enumerate().map(|(i, r)| view! { <RequirementResult index=i result=r /> }).collect_view()}
                        </ol>
                    }.into_any()
                }
            }}
        </div>
    }
}

#[component]
fn RequirementResult(index: usize, result: RequirementVerdict) -> impl IntoView {
    let page = expect_context::<Page>();
    let hint = page.scenario.with_value(|s| {
        s.scenario()
            .requirement(&result.id)
            .map(|r| r.hint.clone())
            .unwrap_or_default()
    });
    let show_hint = RwSignal::new(false);
    let mark = if result.passed { "✓" } else { "✗" };
    let class = if result.passed {
        "result passed"
    } else {
        "result missed"
    };
    let details = result.counterexample.map(|ce| {
        let went_wrong = ce.went_wrong_at;
        let trace_len = ce.trace.len();
        view! {
            <div class="what-happened">
                <h3 class="sub">"What happened"</h3>
                {if ce.failures.is_empty() {
                    view! { <p>"Even a run with no failure misses it."</p> }.into_any()
                } else {
                    view! { <ol class="failures">{ce.failures.iter().map(|f| view! { <li>{f.clone()}</li> }).collect_view()}</ol> }.into_any()
                }}
                // With a diff, the rows are in the diff's tables: the sentence keeps only what it
                // compares ("orders unchanged: 4 rows"), not every row as a tuple.
                <p class="expected-actual">
                    <span class="expected">"Expected "<strong>{headline(&ce.expected, ce.diff.is_some())}</strong></span>
                    <span class="versus">" against "</span>
                    <span class="actual">"actual "<strong>{headline(&ce.actual, ce.diff.is_some())}</strong></span>
                </p>
                {ce.diff.clone().map(|diff| view! { <TableDiffView diff=diff /> })}
                <div class="result-actions">
                    <button class="primary small replay-button" on:click=move |_| {
                        page.replay.set(Some(Replay { requirement: index, index: 0, playing: false }));
                        page.selected.set(None);
                        // The replay happens on the drawing: bring it into view.
                        if let Some(canvas) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.query_selector(".canvas-wrap").ok().flatten()) {
                            canvas.scroll_into_view();
                        }
                    }>{icon(PLAY)}" Replay on the drawing"</button>
                    {(!hint.is_empty()).then(|| view! {
                        <button class="secondary small" aria-expanded=move || show_hint.get().to_string() on:click=move |_| show_hint.update(|s| *s = !*s)>
                            {move || if show_hint.get() { "Hide hint" } else { "Show a hint" }}
                        </button>
                    })}
                </div>
                <Show when=move || show_hint.get()><p class="hint">{hint.clone()}</p></Show>
                <details class="trace">
                    <summary>{format!("The run step by step ({trace_len} steps)")}</summary>
                    <Timeline trace=ce.trace.clone() went_wrong=went_wrong current=None />
                </details>
                <h3 class="sub">{format!("The tables when it went wrong (step {went_wrong})")}</h3>
                <Tables tables=ce.tables.clone() diff=ce.diff.clone() />
            </div>
        }
    });
    view! {
        <li class=class data-requirement=result.id.clone()>
            <p class="result-head"><span class="mark" aria-hidden="true">{mark}</span>
                <span class="visually-hidden">{if result.passed { "Passed: " } else { "Missed: " }}</span>
                <span>{result.text}</span></p>
            {details}
        </li>
    }
}

/// An expected or actual value, without its list of rows when a diff shows them.
fn headline(text: &str, has_diff: bool) -> String {
    match text.split_once(" [") {
        Some((head, _)) if has_diff => head.to_string(),
        _ => text.to_string(),
    }
}

/// What the replay highlights in a diff's table: the columns that differ somewhere, and the
/// rows of the actual side that are wrong with the indices of their wrong cells (all of them
/// for an extra row). Plain vectors: a table has a handful of columns.
#[derive(Default)]
struct Failing {
    columns: Vec<u32>,
    rows: Vec<(Vec<serde_json::Value>, Vec<u32>)>,
}

impl Failing {
    fn of(diff: &TableDiff) -> Self {
        let mut f = Failing::default();
        for r in diff.actual.iter().filter(|r| r.status != RowStatus::Same) {
            let cells = if r.status == RowStatus::Extra {
                (0..r.cells.len() as u32).collect()
            } else {
                r.differs.clone()
            };
            f.rows.push((r.cells.clone(), cells));
        }
        for r in diff.expected.iter().chain(&diff.actual) {
            f.columns.extend(
                r.differs
                    .iter()
                    .filter(|c| !f.columns.contains(c))
                    .collect::<Vec<_>>(),
            );
        }
        f
    }

    /// The wrong cells of a row as readers see it.
    fn cells(&self, row: &[serde_json::Value]) -> Vec<u32> {
        self.rows
            .iter()
            .find(|(cells, _)| cells.as_slice() == row)
            .map(|(_, c)| c.clone())
            .unwrap_or_default()
    }
}

#[component]
fn Timeline(trace: Vec<TraceEntry>, went_wrong: u32, current: Option<usize>) -> impl IntoView {
    view! {
        <ol class="timeline">
            {trace.into_iter().enumerate().map(|(i, t)| {
                let mut class = format!("step {}", outcome_class(&t.outcome, t.failure));
                if t.step == went_wrong {
                    class.push_str(" went-wrong");
                }
                if current == Some(i) {
                    class.push_str(" current");
                }
                view! {
                    <li class=class>
                        <span class="step-time">{t.time.replace('T', " ").trim_end_matches('Z').to_string()}</span>
                        <span class="step-actor">{t.actor.clone()}</span>
                        <span class="step-action">{t.action.clone()}</span>
                        <span class="step-outcome">{if t.failure { format!("✕ {}", t.outcome) } else { t.outcome.clone() }}</span>
                        {t.sql.clone().map(|sql| view! { <pre class="sql" tabindex="0"><code>{sql}</code></pre> })}
                    </li>
                }
            }).collect_view()}
        </ol>
    }
}

/// Tables as readers see them; those in `changed` are marked as changed by the step shown. In
/// the table of `diff`, the columns that differ and the cells of wrong rows are highlighted as
/// in the diff, and marked in words for a screen reader.
#[component]
fn Tables(
    tables: BTreeMap<String, TableView>,
    #[prop(optional)] changed: BTreeSet<String>,
    diff: Option<TableDiff>,
) -> impl IntoView {
    let (diff_table, failing) = match &diff {
        Some(d) => (d.table.clone(), Failing::of(d)),
        None => (String::new(), Failing::default()),
    };
    view! {
        <div class="tables">
            {tables.into_iter().map(|(name, t)| {
                let is_changed = changed.contains(&name);
                let is_diff = name == diff_table;
                let failing_column = |c: usize| is_diff && failing.columns.contains(&(c as u32));
                view! {
                // Focusable, so that a keyboard can scroll a wide table; the caption names it.
                <div class="table-wrap" class:changed=is_changed tabindex="0"><table class="data">
                    <caption>{name}{is_changed.then_some(" · changed by this step")}</caption>
                    <thead><tr>{t.columns.iter().enumerate().map(|(i, c)| view! {
                        <th scope="col" class:failing=failing_column(i)>{c.clone()}
                            {failing_column(i).then(|| view! { <span class="visually-hidden">" (differs)"</span> })}</th>
                    }).collect_view()}</tr></thead>
                    <tbody>
                        {if t.rows.is_empty() {
                            let span = t.columns.len().max(1).to_string();
                            view! { <tr><td class="muted" colspan=span>"(no rows)"</td></tr> }.into_any()
                        } else {
                            t.rows.iter().map(|r| {
                                let bad = if is_diff { failing.cells(r) } else { Vec::new() };
                                view! { <tr>{r.iter().enumerate().map(|(i, c)| view! {
                                    <td class:failing=failing_column(i) class:wrong=bad.contains(&(i as u32))>
                                        {bad.contains(&(i as u32)).then(|| view! { <span class="visually-hidden">"differs: "</span> })}{cell_text(c)}
                                    </td>
                                }).collect_view()}</tr> }
                            }).collect_view().into_any()
                        }}
                    </tbody>
                </table></div>
            }}).collect_view()}
        </div>
    }
}

/// Scrolls the replayed diff table's box sideways, as little as needed, to show its failing
/// column whole.
fn show_failing_columns() {
    let th = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| {
            d.query_selector(".replay .table-wrap th.failing")
                .ok()
                .flatten()
        })
        .and_then(|n| n.dyn_into::<web_sys::HtmlElement>().ok());
    let Some(th) = th else {
        return;
    };
    if let Some(wrap) = th.closest(".table-wrap").ok().flatten() {
        let end = th.offset_left() + th.offset_width();
        if end > wrap.scroll_left() + wrap.client_width() {
            wrap.set_scroll_left(end - wrap.client_width());
        }
    }
}

/// Replay controls beside the drawing: play, pause, step, and the tables at each step.
#[component]
pub fn ReplayPanel() -> impl IntoView {
    let page = expect_context::<Page>();
    let counterexample = Memo::new(move |_| {
        let r = page.replay.get()?;
        page.verdict.with(|v| {
            let req = v.as_ref()?.requirements.get(r.requirement)?;
            Some((req.text.clone(), req.counterexample.clone()?))
        })
    });
    let frame = Memo::new(move |_| page.frame());
    // A table wider than the panel scrolls in its box; the column the diff finds wrong is
    // scrolled into it at every step, so that it is never the part hidden at the right.
    Effect::new(move |_| {
        frame.track();
        request_animation_frame(show_failing_columns);
    });
    let len =
        move || counterexample.with(|c| c.as_ref().map(|(_, ce)| ce.trace.len()).unwrap_or(0));
    let step_to = move |i: usize| {
        page.replay.update(|r| {
            if let Some(r) = r {
                r.index = i
            }
        })
    };
    let playing = move || page.replay.with(|r| r.as_ref().is_some_and(|r| r.playing));

    // Playing advances one step a moment after each step is shown, and stops at the end. Any
    // change to the replay (a step, a pause, a close) supersedes the pending step.
    let autoplay = Debounce::new(Duration::from_millis(900));
    Effect::new(move |_| {
        let Some(r) = page.replay.get() else { return };
        if !r.playing {
            autoplay.cancel();
            return;
        }
        let n = len();
        autoplay.run(move |_| {
            page.replay.update(|x| {
                if let Some(x) = x {
                    if x.index + 1 < n {
                        x.index += 1
                    } else {
                        x.playing = false
                    }
                }
            });
        });
    });

    view! {
        <section class="replay" aria-labelledby="replay-heading">
            <h2 id="replay-heading">"Replay"</h2>
            <p class="replay-of">{move || counterexample.with(|c| c.as_ref().map(|(t, _)| t.clone()).unwrap_or_default())}</p>
            <div class="replay-controls" role="group" aria-label="Replay controls">
                <button class="secondary small" aria-label="Previous step" disabled=move || frame.with(|f| f.as_ref().is_none_or(|f| f.index == 0))
                    on:click=move |_| { let i = frame.with_untracked(|f| f.as_ref().map(|f| f.index).unwrap_or(0)); step_to(i.saturating_sub(1)); }>{icon(BACK)}" Previous"</button>
                <button class="primary small play" aria-label=move || if playing() { "Pause" } else { "Play" }
                    on:click=move |_| page.replay.update(|r| if let Some(r) = r {
                        if !r.playing && r.index + 1 >= len() { r.index = 0; }
                        r.playing = !r.playing;
                    })>{move || if playing() { (icon(PAUSE), " Pause") } else { (icon(PLAY), " Play") }}</button>
                <button class="secondary small" aria-label="Next step" disabled=move || frame.with(|f| f.as_ref().is_none_or(|f| f.index + 1 >= len()))
                    on:click=move |_| { let i = frame.with_untracked(|f| f.as_ref().map(|f| f.index).unwrap_or(0)); step_to((i + 1).min(len().saturating_sub(1))); }>"Next "{icon(NEXT)}</button>
                <span class="replay-position" role="status">{move || frame.with(|f| f.as_ref().map(|f| format!("Step {} of {}", f.index + 1, len())).unwrap_or_default())}</span>
                <button class="link-button close" on:click=move |_| page.replay.set(None)>"Close replay"</button>
            </div>
            {move || {
                let Some(f) = frame.get() else { return view! { <p class="muted">"Nothing to replay."</p> }.into_any() };
                let entry = counterexample.with(|c| c.as_ref().and_then(|(_, ce)| ce.trace.get(f.index).cloned()));
                let Some(entry) = entry else { return view! { <p></p> }.into_any() };
                let class = format!("replay-step {}", outcome_class(&entry.outcome, entry.failure));
                view! {
                    <div class=class>
                        <p class="replay-when"><span>{entry.time.replace('T', " ").trim_end_matches('Z').to_string()}</span>" · "<strong>{entry.actor.clone()}</strong>
                            // The node that acts, which is lit on the drawing: in a pipeline of
                            // several stages, it says which stage this is.
                            {entry.node.clone().filter(|n| *n != entry.actor).map(|n| view! { " " <code class="replay-node">{n}</code> })}</p>
                        <p class="replay-action">{entry.action.clone()}</p>
                        <p class="replay-outcome">{if entry.failure { format!("✕ {}", entry.outcome) } else { entry.outcome.clone() }}</p>
                        {f.went_wrong.then(|| view! { <p class="went-wrong-note">"Here the requirement is missed."</p> })}
                        {entry.sql.clone().map(|sql| view! { <pre class="sql" tabindex="0"><code>{sql}</code></pre> })}
                    </div>
                    <h3>"What readers see"</h3>
                    <Tables tables=f.tables.clone() changed=f.changed.clone() diff=counterexample.with(|c| c.as_ref().and_then(|(_, ce)| ce.diff.clone())) />
                }.into_any()
            }}
        </section>
    }
}

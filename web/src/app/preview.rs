//! The live preview: the browser runs the same `shared` simulator as the server on the design
//! as it is drawn, and the requirements show what it says; and the SQL view, which shows what
//! the design amounts to in PostgreSQL. Both come from the preview's engine, a module of its
//! own that the page loads once it is interactive (`super::engine_module`).

use std::time::Duration;

use leptos::prelude::*;

use super::debounce::Debounce;
use super::engine_module;
use super::page::{preview_setting, Page, Preview, Sql};
use crate::engine::Answer;
use crate::problems::problem_words;
use crate::words;

/// Keeps the preview and the SQL view in step with the design. They follow a few
/// milliseconds after a burst of edits, so that dragging a node does not run the simulator on
/// every step; an answer about a design that has changed since is dropped.
pub fn follow_design(page: Page) {
    let rerun = Debounce::new(Duration::from_millis(40));
    Effect::new(move |_| {
        let design = page.editor.with(|e| serde_json::to_string(e.design()));
        page.preview_busy.set(true);
        rerun.run(move |ticket| {
            let Some(scenario) = page.scenario.try_with_value(|s| s.text()) else {
                return;
            };
            leptos::task::spawn_local(async move {
                let answer = match design {
                    Ok(design) => engine_module::answer(&scenario, &design).await,
                    Err(e) => Err(e.to_string()),
                };
                if ticket.is_current() {
                    show(page, answer);
                }
            });
        });
    });
}

/// Puts the engine's answer on the page.
fn show(page: Page, answer: Result<Answer, String>) {
    let (preview, sql) = match answer {
        Err(e) => (Preview::Failed(e.clone()), Sql::Failed(e)),
        Ok(a) if !a.problems.is_empty() => (
            Preview::Invalid(a.problems.clone()),
            Sql::Invalid(a.problems),
        ),
        Ok(a) => {
            let sql = Sql::Stages(a.stages);
            let preview = match (a.verdict, a.failed) {
                (Some(verdict), _) => Preview::Verdict(verdict),
                (None, Some(e)) => Preview::Failed(e),
                (None, None) if a.too_large => Preview::TooLarge,
                (None, None) => Preview::Failed("the engine said nothing".to_string()),
            };
            (preview, sql)
        }
    };
    page.preview.try_set(preview);
    page.sql.try_set(sql);
    page.preview_busy.try_set(false);
}

/// The requirements, each with what the preview says about it, and its hint on request.
#[component]
pub fn Requirements() -> impl IntoView {
    let page = expect_context::<Page>();
    // The class's setting: every requirement, only what the design lacks, or nothing.
    let setting = preview_setting();
    let lacks = setting == "lacks";
    let nothing = setting == "nothing";
    let requirements: Vec<(String, String, String)> = page.scenario.with_value(|s| {
        s.scenario()
            .requirements
            .iter()
            .map(|r| (r.id.clone(), r.text.clone(), r.hint.clone()))
            .collect()
    });
    view! {
        <section class="requirements" aria-labelledby="req-heading">
            <h2 id="req-heading">"Requirements"</h2>
            <p class="preview-status" role="status">{move || page.preview.with(|p| match p {
                _ if nothing => "Your class shows no preview: press Check for the graded result.".to_string(),
                Preview::Verdict(v) if lacks => {
                    let missing = v.requirements.iter().filter(|r| !r.passed).count();
                    format!("Preview: {missing} requirement(s) still lacking. Check for the graded result.")
                }
                Preview::Pending => "Preview: working…".to_string(),
                Preview::Invalid(_) => "Preview: the design is not complete yet.".to_string(),
                Preview::Verdict(v) => format!("Preview: {} of {} would pass ({} failure schedules tried in your browser). Check for the graded result.", v.score, v.max_score, v.schedules_explored),
                Preview::TooLarge => "Preview: too many schedules to try here; press Check.".to_string(),
                Preview::Failed(e) => format!("Preview unavailable: {e}"),
            })}</p>
            <ul class="req-list">
                {requirements.into_iter().map(|(id, text, hint)| {
                    let rid = id.clone();
                    let state = Memo::new(move |_| page.preview.with(|p| match p {
                        _ if nothing => "unknown",
                        Preview::Verdict(v) => match v.requirements.iter().find(|r| r.id == rid).map(|r| r.passed) {
                            Some(false) => "miss",
                            // Under `lacks`, a requirement met is not told.
                            Some(true) if !lacks => "pass",
                            _ => "unknown",
                        },
                        _ => "unknown",
                    }));
                    let show = RwSignal::new(false);
                    let has_hint = !hint.is_empty();
                    view! {
                        <li class=move || format!("req preview-{}", state.get()) data-requirement=id.clone()>
                            <span class="req-mark" aria-label=move || match state.get() { "pass" => "would pass", "miss" => "would miss", _ => "not known yet" }>
                                {move || match state.get() { "pass" => "✓", "miss" => "✗", _ => "·" }}
                            </span>
                            <span class="req-text">{text}</span>
                            {has_hint.then(|| view! {
                                <button class="link-button hint-button" aria-expanded=move || show.get().to_string() on:click=move |_| show.update(|s| *s = !*s)>
                                    {move || if show.get() { "Hide hint" } else { "Hint" }}
                                </button>
                            })}
                            <Show when=move || show.get()><p class="hint">{hint.clone()}</p></Show>
                        </li>
                    }
                }).collect_view()}
            </ul>
            {move || page.preview.with(|p| match p {
                Preview::Invalid(errors) => Some(view! {
                    <div class="design-problems">
                        <h3>"To finish the design"</h3>
                        <ul>{errors.iter().take(6).map(|e| {
                            let words = page.editor.with(|d| page.scenario.with_value(|s| problem_words(s.scenario(), d.design(), e)));
                            view! { <li title=e.to_string()>{words}</li> }
                        }).collect_view()}</ul>
                    </div>
                }),
                _ => None,
            })}
        </section>
    }
}

/// The SQL the design amounts to, updated as options change: each stage's statements under
/// its node, in the order the stages run. It is marked busy while the preview's engine works
/// out a change.
#[component]
pub fn SqlView() -> impl IntoView {
    let page = expect_context::<Page>();
    view! {
        <div class="sql-view" aria-busy=move || page.preview_busy.get().to_string()>
            {move || match page.sql.get() {
                Sql::Stages(stages) => {
                    let several = stages.len() > 1;
                    view! {
                        <p class="muted small">{if several {
                            "What your design runs, in PostgreSQL, stage by stage in the order they run. It changes as you change the options."
                        } else {
                            "What your design runs, in PostgreSQL. It changes as you change the options."
                        }}</p>
                        {stages.into_iter().enumerate().map(|(i, stage)| view! {
                            <section class="sql-stage" data-stage=stage.node.clone()>
                                {several.then(|| view! {
                                    <h4 class="sql-stage-title">{format!("Stage {}: {} ", i + 1, words::kind_title(stage.kind))}<code>{stage.node.clone()}</code></h4>
                                })}
                                {stage.blocks.into_iter().map(|b| view! {
                                    <h5 class="sql-block-title">{b.title}</h5>
                                    <pre class="sql" tabindex="0"><code>{b.sql}</code></pre>
                                }).collect_view()}
                            </section>
                        }).collect_view()}
                    }.into_any()
                }
                Sql::Invalid(errors) => {
                    let words: Vec<String> = page.editor.with(|e| page.scenario.with_value(|s| {
                        errors.iter().take(5).map(|error| problem_words(s.scenario(), e.design(), error)).collect()
                    }));
                    view! {
                        <p class="muted">"The SQL appears when the design is complete:"</p>
                        <ul>{words.into_iter().map(|e| view! { <li>{e}</li> }).collect_view()}</ul>
                    }.into_any()
                }
                Sql::Pending => view! { <p class="muted">"Working out the SQL…"</p> }.into_any(),
                Sql::Failed(e) => view! { <p class="muted">{format!("The SQL view is unavailable: {e}")}</p> }.into_any(),
            }}
        </div>
    }
}

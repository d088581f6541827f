//! The live preview: the browser runs the same `shared` simulator as the server on the design
//! as it is drawn, and the requirements show what it says; and the SQL view, which shows what
//! the design amounts to in PostgreSQL.

use std::time::Duration;

use leptos::prelude::*;
use shared::design::Design;
use shared::Compiled;

use super::debounce::Debounce;
use super::page::{preview_setting, Page, Preview};
use crate::problems::problem_words;
use crate::{stage_sql, words};

/// Keeps the preview in step with the design. It follows at once, a few milliseconds after a
/// burst of edits, so that dragging a node does not run the simulator on every step.
pub fn follow_design(page: Page) {
    let rerun = Debounce::new(Duration::from_millis(40));
    Effect::new(move |_| {
        let design = page.editor.with(|e| e.design().clone());
        rerun.run(move |_| {
            page.preview
                .set(page.scenario.with_value(|s| preview(s, &design)));
        });
    });
}

/// What the browser's simulator says about a design, kept small enough to stay instant. The
/// scenario was compiled once, when the page opened, and every preview reuses it.
fn preview(scenario: &Compiled, design: &Design) -> Preview {
    match shared::validate(scenario, design.clone()) {
        Err(errors) => Preview::Invalid(errors),
        Ok(valid) => {
            // The preview must stay instant: a check that would take long is left to the server.
            let limits = shared::Limits {
                max_schedules: 20_000,
                max_steps: 20_000_000,
            };
            // The preview shows the score only, so it leaves out coverage and advisories,
            // which cost a search per variant (their code stays out of the app), and shows no
            // scenario hash (so the app carries neither the scenario's serialisation nor sha256).
            match shared::check::check_graded(scenario, "", &valid, limits) {
                Ok(verdict) => Preview::Verdict(verdict),
                Err(shared::CheckError::TooLarge { .. }) => Preview::TooLarge,
                Err(e) => Preview::Failed(e.to_string()),
            }
        }
    }
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
/// its node, in the order the stages run.
#[component]
pub fn SqlView() -> impl IntoView {
    let page = expect_context::<Page>();
    let stages = Memo::new(move |_| {
        let design = page.editor.with(|e| e.design().clone());
        page.scenario
            .with_value(|s| match shared::validate(s, design.clone()) {
                Ok(valid) => {
                    let blocks = shared::sql::design_sql(s, &valid);
                    Ok(stage_sql::by_stage(&valid, blocks))
                }
                Err(errors) => Err(errors
                    .iter()
                    .map(|e| problem_words(s.scenario(), &design, e))
                    .collect::<Vec<_>>()),
            })
    });
    view! {
        <div class="sql-view">
            {move || match stages.get() {
                Ok(stages) => {
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
                Err(errors) => view! {
                    <p class="muted">"The SQL appears when the design is complete:"</p>
                    <ul>{errors.into_iter().take(5).map(|e| view! { <li>{e}</li> }).collect_view()}</ul>
                }.into_any(),
            }}
        </div>
    }
}

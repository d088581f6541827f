//! Under the verdict, what it does not grade: the options of the design this scenario does not
//! put to the test, and the requirements the design would miss under the chapter's other
//! failures, each with the scenario that teaches them (`shared::coverage`).

use leptos::prelude::*;
use shared::verdict::Verdict;

use super::page::Page;
use super::router::Link;
use crate::words::{option_title, value_label};

#[component]
pub fn BeyondThisScenario() -> impl IntoView {
    let page = expect_context::<Page>();
    move || page.verdict.get().map(|v| view! { <Notes verdict=v /> })
}

#[component]
fn Notes(verdict: Verdict) -> impl IntoView {
    let Verdict {
        coverage,
        advisories,
        ..
    } = verdict;
    let untested = (!coverage.untested.is_empty() || !coverage.notes.is_empty()).then(|| {
        view! {
            <section class="beyond untested" aria-labelledby="untested-heading">
                <h3 id="untested-heading">"What this scenario did not test"</h3>
                <p class="not-graded">"Not graded. Another value of these options gives the same result here:"</p>
                <ul>
                    {coverage.untested.into_iter().map(|u| view! {
                        <li data-option=u.option.clone() data-node=u.node.clone()>
                            <strong>{format!("“{}” · {}: {}", u.node, option_title(&u.option), value_label(&u.option, &u.value))}</strong>
                            " — "{u.why}
                            {learn_in(u.learn_in)}
                        </li>
                    }).collect_view()}
                    {coverage.notes.into_iter().map(|n| view! { <li class="muted">{n}</li> }).collect_view()}
                </ul>
            </section>
        }
    });
    let advised = (!advisories.missed.is_empty() || advisories.note.is_some()).then(|| {
        let failures = advisories.failures.join(", ").replace('_', " ");
        view! {
            <section class="beyond advisories" aria-labelledby="advisories-heading">
                <h3 id="advisories-heading">"Beyond this scenario"</h3>
                <p class="not-graded">{format!("Not graded. Under other failures ({failures}, at most {} in a run), your design would miss:", advisories.bound)}</p>
                <ul>
                    {advisories.missed.into_iter().map(|a| {
                        let c = a.counterexample;
                        view! {
                            <li class="advisory" data-requirement=a.id>
                                <p><strong>{a.text}</strong></p>
                                <p class="small">{c.failures.join("; ")}</p>
                                <p class="small">"Expected "<code>{c.expected}</code>", actual "<code>{c.actual}</code></p>
                                <p class="small">{learn_in(a.learn_in)}</p>
                            </li>
                        }
                    }).collect_view()}
                    {advisories.note.map(|n| view! { <li class="muted">{n}</li> })}
                </ul>
            </section>
        }
    });
    view! { {untested}{advised} }
}

/// " Learn it in <link>." for each scenario that teaches what a note says; nothing when none.
fn learn_in(scenarios: Vec<String>) -> impl IntoView {
    (!scenarios.is_empty()).then(|| {
        view! {
            <span class="learn-in">" Learn it in "{scenarios.into_iter().enumerate().map(|(i, id)| view! {
                {(i > 0).then_some(", ")}
                <Link href=format!("/scenarios/{id}")>{id}</Link>
            }).collect_view()}"."</span>
        }
    })
}

//! A counterexample's table diff: the rows the table should hold and the rows it holds, as two
//! tables side by side (stacked on a narrow screen). Every row says in words whether it is the
//! same, missing, extra or different, and a different cell is a `<mark>` with its word, so
//! that neither colour nor sight is needed to find the difference.

use leptos::prelude::*;
use shared::verdict::{DiffRow, TableDiff};

use crate::replay::cell_text;

#[component]
pub fn TableDiffView(diff: TableDiff) -> impl IntoView {
    let summary = shared::diff::summary(&diff);
    let TableDiff {
        table,
        columns,
        expected,
        actual,
        ..
    } = diff;
    view! {
        <div class="table-diff">
            <p class="diff-summary">{summary}</p>
            <div class="diff-sides">
                <DiffSide caption=format!("Expected {table}") columns=columns.clone() rows=expected />
                <DiffSide caption=format!("Actual {table}") columns=columns rows=actual />
            </div>
        </div>
    }
}

#[component]
fn DiffSide(caption: String, columns: Vec<String>, rows: Vec<DiffRow>) -> impl IntoView {
    let span = (columns.len() + 1).to_string();
    view! {
        // Focusable, so that a keyboard can scroll a wide table; the caption names it.
        <div class="table-wrap" tabindex="0">
            <table class="data diff">
                <caption>{caption}</caption>
                <thead><tr>
                    <th scope="col">"Row"</th>
                    {columns.iter().map(|c| view! { <th scope="col">{c.clone()}</th> }).collect_view()}
                </tr></thead>
                <tbody>
                    {if rows.is_empty() {
                        view! { <tr><td class="muted" colspan=span>"(no rows)"</td></tr> }.into_any()
                    } else {
                        rows.into_iter().map(|r| {
                            let (symbol, word) = (r.status.symbol(), r.status.word());
                            view! {
                                <tr class=format!("diff-{word}")>
                                    <th scope="row" class="diff-status"><span aria-hidden="true">{symbol}" "</span>{word}</th>
                                    {r.cells.iter().enumerate().map(|(c, cell)| {
                                        let text = cell_text(cell);
                                        if r.differs.contains(&(c as u32)) {
                                            view! { <td><mark><span class="visually-hidden">"differs: "</span>{text}</mark></td> }.into_any()
                                        } else {
                                            view! { <td>{text}</td> }.into_any()
                                        }
                                    }).collect_view()}
                                </tr>
                            }
                        }).collect_view().into_any()
                    }}
                </tbody>
            </table>
        </div>
    }
}

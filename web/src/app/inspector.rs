//! The inspector beside the canvas: the selected node's options in the chapter's words, its
//! connections, and the actions on it; or the selected connection; or the quick keys.

use leptos::prelude::*;
use serde_json::Value as Json;
use shared::design::{NodeKind, OptionValues};

use super::dom::{focus, icon, CLOSE};
use super::page::{Page, Selection};
use crate::canvas::{self, allowed_values};
use crate::words;

/// The selected node's options as labelled choices, each with one line in the chapter's words.
#[component]
pub fn Inspector() -> impl IntoView {
    let page = expect_context::<Page>();
    // Re-drawn only when what is selected changes, so focus stays on a choice while it changes.
    let target = Memo::new(move |_| match page.selected.get() {
        Some(Selection::Node(id)) => page
            .editor
            .with(|e| e.node(&id).map(|n| (Some((id.clone(), n.kind)), None)))
            .unwrap_or((None, None)),
        Some(Selection::Edge(a, b)) => {
            let exists = page
                .editor
                .with(|e| e.design().edges.iter().any(|x| x.from == a && x.to == b));
            (None, exists.then_some((a, b)))
        }
        None => (None, None),
    });
    // Esc goes back from the options to the node on the drawing.
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Escape" {
            if let Some(Selection::Node(id)) = page.selected.get_untracked() {
                ev.prevent_default();
                page.focus_node(&id);
            }
        }
    };
    view! {
        <section class="inspector" aria-labelledby="inspector-heading" on:keydown=on_key>
            {move || match target.get() {
                (Some((id, kind)), _) => view! { <NodeOptions id=id kind=kind /> }.into_any(),
                (None, Some((a, b))) => {
                    let label = format!("Delete the connection {a} → {b}");
                    view! {
                        <CloseSheet />
                        <h2 id="inspector-heading">"Connection"</h2>
                        <p><code>{a.clone()}</code>" → "<code>{b.clone()}</code></p>
                        {(!page.read_only()).then(|| view! { <button class="danger" aria-label=label on:click=move |_| page.delete_selection()>"Delete connection"</button> })}
                    }.into_any()
                }
                _ => view! {
                    <h2 id="inspector-heading">"Inspector"</h2>
                    <p class="muted">"Select a node to see its options."</p>
                    <h3>"Quick keys"</h3>
                    <dl class="keys">
                        <dt><kbd>"Tab"</kbd></dt><dd>"next node"</dd>
                        <dt><kbd>"←↑→↓"</kbd></dt><dd>"move the node (Shift: faster)"</dd>
                        <dt><kbd>"Enter"</kbd></dt><dd>"open its options"</dd>
                        <dt><kbd>"C"</kbd>", then "<kbd>"Enter"</kbd></dt><dd>"connect: pick a source, then its target"</dd>
                        <dt><kbd>"Delete"</kbd></dt><dd>"remove it"</dd>
                        <dt><kbd>"Ctrl+Z"</kbd>" / "<kbd>"Ctrl+Y"</kbd></dt><dd>"undo / redo"</dd>
                    </dl>
                    <p class="muted small">"With a mouse or finger: drag from a node's right port to another's left port, or tap one port and then the other. Drag the background to pan; scroll to zoom."</p>
                }.into_any(),
            }}
        </section>
    }
}

/// A node's options, its connections, and the actions on it.
#[component]
fn NodeOptions(id: String, kind: NodeKind) -> impl IntoView {
    let page = expect_context::<Page>();
    let scenario = page.scenario.get_value();
    let current = {
        let id = id.clone();
        move |option: &'static str| {
            page.editor
                .with(|e| e.node(&id).and_then(|n| n.options.get(option).cloned()))
        }
    };
    let options = kind.options().iter().map(|spec| {
        let name = spec.name;
        let legend = words::option_title(name);
        let id = id.clone();
        let group = format!("opt-{id}-{name}");
        let current = current.clone();
        match spec.values {
            OptionValues::Count { default, max } if allowed_values(&scenario, kind, name).is_empty() => {
                // The window matters only while the consumer remembers keys.
                let shown = {
                    let current = current.clone();
                    move || current("dedupe").and_then(|v| v.as_str().map(|s| s == "in_memory")).unwrap_or(false)
                };
                let value = move || current(name).and_then(|v| v.as_u64()).unwrap_or(u64::from(default)).to_string();
                view! {
                    <div class="option" class:hidden=move || !shown()>
                        <label class="option-title" for=group.clone()>{legend}</label>
                        <input type="number" id=group min="1" max=max.to_string() prop:value=value
                            on:change=move |ev| {
                                let text = event_target_value(&ev);
                                match text.parse::<u32>() {
                                    Ok(n) if (1..=max).contains(&n) => page.editor.update(|e| e.set_option(&id, name, Json::from(n))),
                                    _ => page.say(format!("{legend} is a whole number from 1 to {max}."), true),
                                }
                            } />
                        <p class="choice-line">"how many recent keys the consumer remembers"</p>
                    </div>
                }.into_any()
            }
            OptionValues::Key => {
                // The keys the chosen table offers; none means the table has no natural key.
                let keys = {
                    let current = current.clone();
                    move || {
                    let table = current("table").and_then(|v| v.as_str().map(str::to_string));
                    page.scenario.with_value(|s| table.and_then(|t| s.table(&t).map(|t| t.keys.clone())).unwrap_or_default())
                }};
                let id2 = id.clone();
                // A key matters only to the writes that match rows by it.
                let shown = {
                    let current = current.clone();
                    move || current("write").and_then(|v| v.as_str().map(|w| w == "merge" || w == "insert_ignore")).unwrap_or(false)
                };
                view! {
                    <fieldset class="option" class:hidden=move || !shown()>
                        <legend class="option-title">{legend}</legend>
                        {move || {
                            let keys = keys();
                            if keys.is_empty() {
                                return view! { <p class="choice-line">"this table has no natural key"</p> }.into_any();
                            }
                            let chosen: Vec<String> = current(name).map(|v| match v {
                                Json::Array(items) => items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect(),
                                Json::String(s) => vec![s],
                                _ => Vec::new(),
                            }).unwrap_or_else(|| keys[0].clone());
                            keys.into_iter().map(|key| {
                                let checked = key == chosen;
                                let label = format!("by {}", key.join(", "));
                                let id = id2.clone();
                                let value = Json::from(key.clone());
                                view! {
                                    <label class="choice">
                                        <input type="radio" name=group.clone() prop:checked=checked
                                            on:change=move |_| page.editor.update(|e| e.set_option(&id, name, value.clone())) />
                                        <span class="choice-label">{label}</span>
                                        <span class="choice-line">"MERGE and ON CONFLICT match rows on this key"</span>
                                    </label>
                                }
                            }).collect_view().into_any()
                        }}
                    </fieldset>
                }.into_any()
            }
            _ => {
                // The palette's values, and only those; a count the palette lists is a choice too.
                let values = allowed_values(&scenario, kind, name);
                // A missing count takes its own default, which the palette may not offer.
                let default = match spec.values {
                    OptionValues::Count { default, .. } => default.to_string(),
                    _ => values.first().cloned().unwrap_or_default(),
                };
                let count = matches!(spec.values, OptionValues::Count { .. });
                let hidden = {
                    let current = current.clone();
                    move || count && current("dedupe").and_then(|v| v.as_str().map(|s| s != "in_memory")).unwrap_or(true)
                };
                view! {
                    <fieldset class="option" class:hidden=hidden>
                        <legend class="option-title">{legend}</legend>
                        {values.into_iter().map(|value| {
                            let (label, line) = words::value_words(name, &value);
                            // Names (tables, streams) are their own label; choices show their JSON value too.
                            let code = (!label.is_empty()).then(|| value.clone());
                            let label = if label.is_empty() { value.clone() } else { label.to_string() };
                            let v = value.clone();
                            let d = default.clone();
                            let current = current.clone();
                            let checked = move || current(name).map(|j| match j { Json::String(s) => s, other => other.to_string() }).unwrap_or_else(|| d.clone()) == v;
                            let id = id.clone();
                            let json = match value.parse::<u32>() {
                                Ok(n) if count => Json::from(n),
                                _ => Json::from(value.clone()),
                            };
                            view! {
                                <label class="choice">
                                    <input type="radio" name=group.clone() value=value.clone() prop:checked=checked
                                        on:change=move |_| page.editor.update(|e| e.set_option(&id, name, json.clone())) />
                                    <span class="choice-label">{label}" "{code.map(|c| view! { <code class="choice-value">{c}</code> })}</span>
                                    <span class="choice-line">{line}</span>
                                </label>
                            }
                        }).collect_view()}
                    </fieldset>
                }.into_any()
            }
        }
    }).collect_view();
    let (cid, did) = (id.clone(), id.clone());
    let connectable = canvas::has_output(kind);
    let eid = id.clone();
    let connections = move || {
        page.editor.with(|e| {
            e.design()
                .edges
                .iter()
                .filter(|x| x.from == eid || x.to == eid)
                .map(|x| (x.from.clone(), x.to.clone()))
                .collect::<Vec<_>>()
        })
    };
    view! {
        <CloseSheet />
        <h2 id="inspector-heading">{words::kind_title(kind)}" "<code>{id.clone()}</code></h2>
        <p class="kind-line">{words::kind_line(kind)}</p>
        // Shown, not editable, when the design is read-only.
        <fieldset class="options" disabled=page.read_only()>
            <legend class="visually-hidden">"Options"</legend>
            {options}
        </fieldset>
        <div class="connections">
            <h3>"Connections"</h3>
            {move || {
                let list = connections();
                if list.is_empty() {
                    return view! { <p class="muted small">"None yet."</p> }.into_any();
                }
                view! {
                    <ul>{list.into_iter().map(|(a, b)| {
                        let label = format!("Remove the connection {a} → {b}");
                        let (ra, rb) = (a.clone(), b.clone());
                        view! {
                            <li><code>{a}</code>" → "<code>{b}</code>
                                {(!page.read_only()).then(|| view! { <button class="link-button" aria-label=label on:click=move |_| page.remove_connection(&ra, &rb)>"Remove"</button> })}
                            </li>
                        }
                    }).collect_view()}</ul>
                }.into_any()
            }}
        </div>
        <div class="inspector-actions" class:hidden=page.read_only()>
            {connectable.then(|| view! {
                <button class="secondary" on:click=move |_| { page.start_connecting(&cid); focus(&format!("g.node[data-node=\"{cid}\"]")); }>"Connect from here"</button>
            })}
            <button class="danger" aria-label=format!("Delete node {id}") on:click=move |_| {
                page.selected.set(Some(Selection::Node(did.clone())));
                page.delete_selection();
            }>"Delete node"</button>
        </div>
    }
}

/// Closes the inspector (on a phone, the sheet over the drawing) and goes back to the canvas.
#[component]
fn CloseSheet() -> impl IntoView {
    let page = expect_context::<Page>();
    view! {
        <button class="icon sheet-close" aria-label="Close the options" title="Close" on:click=move |_| {
            page.selected.set(None);
            focus(".canvas");
        }>{icon(CLOSE)}</button>
    }
}

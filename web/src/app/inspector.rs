//! The inspector beside the canvas: the selected node's options in the chapter's words, its
//! connections, and the actions on it; or the selected connection; or the quick keys.

use leptos::prelude::*;
use serde_json::Value as Json;
use shared::design::{Choice, NodeKind, OptionSpec, OptionValues, WriteMode};

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
                        <CloseSheet><h2 id="inspector-heading">"Connection"</h2></CloseSheet>
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

/// The current value of one option of a node, as drawn (`None` when the default applies).
fn current(page: Page, id: &str, option: &str) -> Option<Json> {
    page.editor
        .with(|e| e.node(id).and_then(|n| n.options.get(option).cloned()))
}

/// The current string value of one option of a node.
fn current_text(page: Page, id: &str, option: &str) -> Option<String> {
    current(page, id, option).and_then(|v| v.as_str().map(str::to_string))
}

/// Whether the node's write finds rows by a key (merge, insert-ignore, merge if newer).
fn writes_by_key(page: Page, id: &str) -> bool {
    current_text(page, id, "write")
        .and_then(|w| WriteMode::parse(&w))
        .is_some_and(WriteMode::by_key)
}

/// A node's options, its connections, and the actions on it.
#[component]
fn NodeOptions(id: String, kind: NodeKind) -> impl IntoView {
    let page = expect_context::<Page>();
    let options = kind
        .options()
        .iter()
        .map(|spec| option_view(page, &id, kind, spec))
        .collect_view();
    let (cid, did) = (id.clone(), id.clone());
    let connectable = {
        let id = id.clone();
        move || {
            page.editor
                .with(|e| e.node(&id).is_some_and(|n| e.ports().has_output(n)))
        }
    };
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
    let title_id = id.clone();
    view! {
        <CloseSheet><h2 id="inspector-heading">{words::kind_title(kind)}" "<code>{title_id}</code></h2></CloseSheet>
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
            {move || connectable().then(|| {
                let cid = cid.clone();
                view! {
                    <button class="secondary" on:click=move |_| { page.start_connecting(&cid); focus(&format!("g.node[data-node=\"{cid}\"]")); }>"Connect from here"</button>
                }
            })}
            <button class="danger" aria-label=format!("Delete node {id}") on:click=move |_| {
                page.selected.set(Some(Selection::Node(did.clone())));
                page.delete_selection();
            }>"Delete node"</button>
        </div>
    }
}

/// One option of a node in the inspector: its values as labelled choices (a number for a
/// count the palette does not list; the table's keys or version columns for those options).
fn option_view(page: Page, id: &str, kind: NodeKind, spec: &OptionSpec) -> AnyView {
    let scenario = page.scenario.get_value();
    let allowed = allowed_values(scenario.scenario(), kind, spec.name);
    match spec.values {
        OptionValues::Count { default, max } if allowed.is_empty() => {
            count_input(page, id.to_string(), spec.name, default, max)
        }
        OptionValues::Key => key_choices(page, id.to_string(), spec.name),
        OptionValues::Version => version_choices(page, id.to_string(), spec.name),
        _ => value_choices(page, id.to_string(), spec, allowed),
    }
}

/// A whole number typed in (the dedupe window, when the palette lists no values for it).
fn count_input(page: Page, id: String, name: &'static str, default: u32, max: u32) -> AnyView {
    let legend = words::option_title(name);
    let group = format!("opt-{id}-{name}");
    // The window matters only while the consumer remembers keys.
    let shown = {
        let id = id.clone();
        move || current_text(page, &id, "dedupe").as_deref() == Some("in_memory")
    };
    let value = {
        let id = id.clone();
        move || {
            current(page, &id, name)
                .and_then(|v| v.as_u64())
                .unwrap_or(u64::from(default))
                .to_string()
        }
    };
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
    }
    .into_any()
}

/// The keys the node's table offers, shown while the write finds rows by a key.
fn key_choices(page: Page, id: String, name: &'static str) -> AnyView {
    let legend = words::option_title(name);
    let group = format!("opt-{id}-{name}");
    let shown = {
        let id = id.clone();
        move || writes_by_key(page, &id)
    };
    let choices = move || {
        let keys = page
            .editor
            .with(|e| {
                e.node(&id).map(|n| {
                    page.scenario
                        .with_value(|s| canvas::table_keys(s.scenario(), n))
                })
            })
            .unwrap_or_default();
        if keys.is_empty() {
            return view! { <p class="choice-line">"this table has no natural key"</p> }.into_any();
        }
        let chosen: Vec<String> = current(page, &id, name)
            .map(|v| match v {
                Json::Array(items) => items
                    .iter()
                    .filter_map(|i| i.as_str().map(str::to_string))
                    .collect(),
                Json::String(s) => vec![s],
                _ => Vec::new(),
            })
            .unwrap_or_else(|| keys[0].clone());
        keys.into_iter().map(|key| {
            let checked = key == chosen;
            let label = format!("by {}", key.join(", "));
            let id = id.clone();
            let value = Json::from(key.clone());
            view! {
                <label class="choice">
                    <input type="radio" name=group.clone() prop:checked=checked
                        on:change=move |_| page.editor.update(|e| e.set_option(&id, name, value.clone())) />
                    <span class="choice-label">{label}</span>
                    <span class="choice-line">"rows with the same key are the same row"</span>
                </label>
            }
        }).collect_view().into_any()
    };
    view! {
        <fieldset class="option" class:hidden=move || !shown()>
            <legend class="option-title">{legend}</legend>
            {choices}
        </fieldset>
    }
    .into_any()
}

/// The columns the node's table offers as a version, shown while the write is "merge if
/// newer", which compares them.
fn version_choices(page: Page, id: String, name: &'static str) -> AnyView {
    let legend = words::option_title(name);
    let group = format!("opt-{id}-{name}");
    let shown = {
        let id = id.clone();
        move || current_text(page, &id, "write").as_deref() == Some(WriteMode::MergeIfNewer.name())
    };
    let choices = move || {
        let versions = page
            .editor
            .with(|e| {
                e.node(&id).map(|n| {
                    page.scenario
                        .with_value(|s| canvas::table_versions(s.scenario(), n))
                })
            })
            .unwrap_or_default();
        if versions.is_empty() {
            return view! { <p class="choice-line">"this table has no version column"</p> }
                .into_any();
        }
        let chosen = current_text(page, &id, name).unwrap_or_else(|| versions[0].clone());
        versions.into_iter().map(|column| {
            let checked = column == chosen;
            let line = format!("a row is applied only when its {column} is greater than the stored row's");
            let id = id.clone();
            let value = Json::from(column.clone());
            view! {
                <label class="choice">
                    <input type="radio" name=group.clone() value=column.clone() prop:checked=checked
                        on:change=move |_| page.editor.update(|e| e.set_option(&id, name, value.clone())) />
                    <span class="choice-label">{format!("by {column}")}</span>
                    <span class="choice-line">{line}</span>
                </label>
            }
        }).collect_view().into_any()
    };
    view! {
        <fieldset class="option" class:hidden=move || !shown()>
            <legend class="option-title">{legend}</legend>
            {choices}
        </fieldset>
    }
    .into_any()
}

/// The palette's values of a choice (or of a count the palette lists), and only those, each
/// with its label and one line in the chapter's words.
fn value_choices(page: Page, id: String, spec: &OptionSpec, values: Vec<String>) -> AnyView {
    let name = spec.name;
    let legend = words::option_title(name);
    let group = format!("opt-{id}-{name}");
    // A missing count takes its own default, which the palette may not offer.
    let default = match spec.values {
        OptionValues::Count { default, .. } => default.to_string(),
        _ => values.first().cloned().unwrap_or_default(),
    };
    let count = matches!(spec.values, OptionValues::Count { .. });
    let hidden = {
        let id = id.clone();
        move || count && current_text(page, &id, "dedupe").as_deref() != Some("in_memory")
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
                let cid = id.clone();
                let checked = move || current(page, &cid, name).map(|j| match j { Json::String(s) => s, other => other.to_string() }).unwrap_or_else(|| d.clone()) == v;
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
    }
    .into_any()
}

/// The bar atop the options on a phone, where they are a sheet over the drawing: fold the
/// sheet to this bar (the design, the task and its requirements are then all in view), open
/// it again, or close it and go back to the canvas. The bar and the title under it (the
/// children) stay together at the top of the sheet as its options scroll, so the title is
/// never under the bar.
#[component]
fn CloseSheet(children: Children) -> impl IntoView {
    let page = expect_context::<Page>();
    let folded = page.sheet_folded;
    view! {
        <div class="sheet-head">
            <div class="sheet-bar">
                <button class="secondary small sheet-fold" aria-expanded=move || (!folded.get()).to_string()
                    on:click=move |_| folded.update(|f| *f = !*f)>
                    {move || if folded.get() { "Show the options" } else { "Fold to a bar" }}
                </button>
                <button class="icon sheet-close" aria-label="Close the options" title="Close" on:click=move |_| {
                    page.selected.set(None);
                    focus(".canvas");
                }>{icon(CLOSE)}</button>
            </div>
            {children()}
        </div>
    }
}

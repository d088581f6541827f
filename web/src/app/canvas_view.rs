//! The canvas: the design drawn in SVG, and what pointers and keys do to it: select, move,
//! connect, pan, zoom, drop from the palette, delete. The replay's current step is drawn on it.

use leptos::prelude::*;
use shared::design::{Design, NodeKind};

use super::dom::{event_element, focus, icon, MINUS, PLUS};
use super::page::{Page, Selection};
use crate::canvas::{
    self, hit_test_at, Hit, Point, View, NODE_H, NODE_W, PORT_R, ZOOM_MIN, ZOOM_READABLE,
};
use crate::replay::Frame;
use crate::words;

/// The message over the drawing: what an action did, or why it was refused.
#[component]
fn Notice() -> impl IntoView {
    let page = expect_context::<Page>();
    view! {
        <p class=move || page.notice.with(|n| match n { Some((_, true)) => "notice refusal", Some(_) => "notice", None => "notice empty" })
            role="status" aria-live="polite">
            {move || page.notice.with(|n| n.as_ref().map(|(t, _)| t.clone()).unwrap_or_default())}
        </p>
    }
}

/// What a pointer is doing on the canvas between down and up.
#[derive(Clone, Debug)]
enum Drag {
    Move {
        id: String,
        before: Design,
        grab: Point,
        start: Point,
        moved: bool,
    },
    Wire {
        from: String,
        start: Point,
    },
    Tap {
        target: String,
    },
    Pan {
        start: Point,
        view: View,
    },
    /// One finger on the drawing's background: the page scrolls, as it does everywhere else
    /// on a phone. Client coordinates; a touch that never moved is a tap.
    Scroll {
        start: Point,
        last: Point,
        moved: bool,
    },
    /// Two fingers: the drawing follows them and zooms as they spread or pinch. Points are
    /// relative to the drawing.
    Pinch {
        from: (Point, Point),
        view: View,
    },
}

/// Where a pointer is on the screen (the browser's client coordinates).
fn client_point(ev: &web_sys::MouseEvent) -> Point {
    Point::new(f64::from(ev.client_x()), f64::from(ev.client_y()))
}

/// The first two fingers on the drawing, relative to it.
fn two_fingers(ev: &web_sys::MouseEvent, touches: &[(i32, Point)]) -> Option<(Point, Point)> {
    let rect = event_element(ev)?.get_bounding_client_rect();
    let local = |p: Point| Point::new(p.x - rect.left(), p.y - rect.top());
    match touches {
        [(_, a), (_, b), ..] => Some((local(*a), local(*b))),
        _ => None,
    }
}

/// Where a pointer event happened, relative to the element it is handled on.
fn local_point(ev: &web_sys::MouseEvent) -> Option<Point> {
    let svg = event_element(ev)?;
    let rect = svg.get_bounding_client_rect();
    Some(Point::new(
        f64::from(ev.client_x()) - rect.left(),
        f64::from(ev.client_y()) - rect.top(),
    ))
}

/// The drawing: nodes and connections in SVG, with pointer, wheel, drop and keyboard handling.
#[component]
pub fn CanvasView() -> impl IntoView {
    let page = expect_context::<Page>();
    let drag: StoredValue<Option<Drag>> = StoredValue::new(None);
    // The fingers on the drawing now, by pointer id, at their client positions.
    let touches: StoredValue<Vec<(i32, Point)>> = StoredValue::new(Vec::new());
    // A second finger ends what the first was doing (a move is kept as one edit, a
    // connection being drawn is dropped) and starts a pinch.
    let end_for_pinch = move || match drag.try_update_value(Option::take).flatten() {
        Some(Drag::Move {
            id,
            before,
            moved: true,
            ..
        }) => page.editor.update(|e| e.finish_move(&id, before)),
        Some(Drag::Wire { .. }) => page.wire.set(None),
        _ => {}
    };
    let wrap = NodeRef::<leptos::html::Div>::new();
    // Runs at the next frame, when the page may already be gone (a page replaced at once):
    // then it does nothing. `min_zoom` is the smallest zoom it may choose.
    let fit = move |min_zoom: f64| {
        // The drawing's own size: the notice strip above it is not drawn on.
        let svg = wrap
            .try_get_untracked()
            .flatten()
            .and_then(|div| div.query_selector("svg.canvas").ok().flatten());
        if let Some(svg) = svg {
            let (w, h) = (
                f64::from(svg.client_width()),
                f64::from(svg.client_height()),
            );
            if let Some(view) = page
                .editor
                .try_with_untracked(|e| canvas::fit_readable(e.design(), w, h, min_zoom))
            {
                page.view.try_set(view);
            }
        }
    };
    // The design opens fitted to the width, but never below a zoom whose words can be read:
    // a wider one starts at its left edge, where data starts. Fit shows all of it.
    request_animation_frame(move || fit(ZOOM_READABLE));

    let on_down = move |ev: leptos::ev::PointerEvent| {
        if ev.button() != 0 {
            return;
        }
        let touch = ev.pointer_type() == "touch";
        if touch {
            let (pointer, at) = (ev.pointer_id(), client_point(&ev));
            touches.update_value(|t| {
                t.retain(|(id, _)| *id != pointer);
                t.push((pointer, at));
            });
            if let Some(from) = touches.with_value(|t| two_fingers(&ev, t)) {
                end_for_pinch();
                drag.set_value(Some(Drag::Pinch {
                    from,
                    view: page.view.get_untracked(),
                }));
                if let Some(el) = event_element(&ev) {
                    let _ = el.set_pointer_capture(ev.pointer_id());
                }
                return;
            }
        }
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let view = page.view.get_untracked();
        let world = view.to_world(screen);
        let hit = page
            .editor
            .with_untracked(|e| hit_test_at(e.design(), e.ports(), world, view.zoom));
        // A design shown read-only can be panned, and its nodes selected to read their
        // options; it cannot be wired (the editor refuses every change).
        let hit = match hit {
            Hit::OutPort(_) | Hit::InPort(_) if page.read_only() => Hit::Empty,
            other => other,
        };
        let next = match hit {
            Hit::OutPort(from) => {
                let port = page
                    .editor
                    .with_untracked(|e| e.node(&from).map(canvas::out_port))
                    .unwrap_or(world);
                page.wire.set(Some((port, world)));
                Some(Drag::Wire {
                    from,
                    start: screen,
                })
            }
            Hit::InPort(target) => Some(Drag::Tap { target }),
            Hit::Node(id) => {
                let p = page
                    .editor
                    .with_untracked(|e| e.node(&id).map(canvas::position))
                    .unwrap_or(world);
                if page.selected.get_untracked() != Some(Selection::Node(id.clone())) {
                    page.selected.set(Some(Selection::Node(id.clone())));
                }
                let before = page.editor.with_untracked(|e| e.design().clone());
                Some(Drag::Move {
                    id,
                    before,
                    grab: Point::new(world.x - p.x, world.y - p.y),
                    start: screen,
                    moved: false,
                })
            }
            // A finger on the background scrolls the page; a tap there clears the selection
            // when the finger lifts.
            Hit::Empty if touch => {
                let at = client_point(&ev);
                Some(Drag::Scroll {
                    start: at,
                    last: at,
                    moved: false,
                })
            }
            Hit::Empty => {
                page.selected.set(None);
                Some(Drag::Pan {
                    start: screen,
                    view: page.view.get_untracked(),
                })
            }
        };
        drag.set_value(next);
        if let Some(el) = event_element(&ev) {
            let _ = el.set_pointer_capture(ev.pointer_id());
        }
    };
    let on_move = move |ev: leptos::ev::PointerEvent| {
        if ev.pointer_type() == "touch" {
            let (pointer, at) = (ev.pointer_id(), client_point(&ev));
            touches.update_value(|t| {
                if let Some(finger) = t.iter_mut().find(|(id, _)| *id == pointer) {
                    finger.1 = at;
                }
            });
        }
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let view = page.view.get_untracked();
        let world = view.to_world(screen);
        drag.update_value(|d| match d {
            Some(Drag::Move {
                id,
                grab,
                start,
                moved,
                ..
            }) => {
                if !*moved && (screen.x - start.x).abs() + (screen.y - start.y).abs() < 4.0 {
                    return;
                }
                *moved = true;
                let to = Point::new(world.x - grab.x, world.y - grab.y);
                let current = page
                    .editor
                    .with_untracked(|e| e.node(id).map(canvas::position));
                if current != Some(canvas::snap_point(to)) {
                    page.editor.update(|e| e.place(id, to));
                }
            }
            Some(Drag::Wire { .. }) => page.wire.update(|w| {
                if let Some((_, end)) = w {
                    *end = world;
                }
            }),
            Some(Drag::Pan { start, view: v0 }) => {
                page.view.set(View {
                    pan_x: v0.pan_x + screen.x - start.x,
                    pan_y: v0.pan_y + screen.y - start.y,
                    zoom: v0.zoom,
                });
            }
            Some(Drag::Scroll { start, last, moved }) => {
                let at = client_point(&ev);
                window().scroll_by_with_x_and_y(0.0, last.y - at.y);
                *last = at;
                *moved |= (at.x - start.x).abs() + (at.y - start.y).abs() >= 6.0;
            }
            Some(Drag::Pinch { from, view: v0 }) => {
                if let Some(now) = touches.with_value(|t| two_fingers(&ev, t)) {
                    page.view.set(v0.pinch(*from, now));
                }
            }
            _ => {}
        });
    };
    // A finger lifted, or taken by the browser: it no longer counts.
    let lift = move |ev: &leptos::ev::PointerEvent| {
        if ev.pointer_type() == "touch" {
            let pointer = ev.pointer_id();
            touches.update_value(|t| t.retain(|(id, _)| *id != pointer));
        }
    };
    let on_cancel = move |ev: leptos::ev::PointerEvent| {
        lift(&ev);
        end_for_pinch();
    };
    let on_up = move |ev: leptos::ev::PointerEvent| {
        lift(&ev);
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let view = page.view.get_untracked();
        let world = view.to_world(screen);
        let Some(d) = drag.try_update_value(Option::take).flatten() else {
            return;
        };
        match d {
            Drag::Move {
                id, before, moved, ..
            } => {
                if moved {
                    page.editor.update(|e| e.finish_move(&id, before));
                } else if let Some(source) = page.connecting.get_untracked().filter(|s| *s != id) {
                    page.connect(&source, &id);
                }
            }
            Drag::Wire { from, start } => {
                page.wire.set(None);
                let moved = (screen.x - start.x).abs() + (screen.y - start.y).abs() >= 6.0;
                let target = match page
                    .editor
                    .with_untracked(|e| hit_test_at(e.design(), e.ports(), world, view.zoom))
                {
                    Hit::InPort(t) | Hit::Node(t) => Some(t),
                    _ => None,
                };
                match (moved, target) {
                    (true, Some(t)) if t != from => page.connect(&from, &t),
                    (true, _) => page.say(
                        "Drop the connection on another node's input port (its left side).",
                        false,
                    ),
                    // A tap on an output port starts a connection that a second tap finishes.
                    (false, _) => page.start_connecting(&from),
                }
            }
            Drag::Tap { target } => {
                if let Some(source) = page.connecting.get_untracked() {
                    page.connect(&source, &target);
                } else {
                    page.selected.set(Some(Selection::Node(target)));
                }
            }
            Drag::Scroll { moved: false, .. } => page.selected.set(None),
            Drag::Pan { .. } | Drag::Scroll { .. } | Drag::Pinch { .. } => {}
        }
    };
    // The wheel scrolls the page, as everywhere else; Ctrl or ⌘ with the wheel (which is also
    // what a trackpad's pinch sends) zooms the drawing.
    let on_wheel = move |ev: leptos::ev::WheelEvent| {
        if !(ev.ctrl_key() || ev.meta_key()) {
            return;
        }
        ev.prevent_default();
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let factor = if ev.delta_y() < 0.0 { 1.1 } else { 1.0 / 1.1 };
        page.view.update(|v| *v = v.zoom_at(screen, factor));
    };
    let on_drop = drop_handler(page);
    let on_key = key_handler(page);

    let frame = Memo::new(move |_| page.frame());
    let node_ids = move || {
        page.editor.with(|e| {
            e.design()
                .nodes
                .iter()
                .map(|n| n.id.clone())
                .collect::<Vec<_>>()
        })
    };
    let edge_ids = move || {
        page.editor.with(|e| {
            e.design()
                .edges
                .iter()
                .map(|e| (e.from.clone(), e.to.clone()))
                .collect::<Vec<_>>()
        })
    };
    let count = move || page.editor.with(|e| e.design().nodes.len());

    view! {
        <div class="canvas-wrap" node_ref=wrap>
            <Notice />
            <svg class=move || if page.connecting.with(Option::is_some) { "canvas connecting" } else { "canvas" }
                tabindex="0" role="group"
                aria-label=move || format!("Canvas with {} nodes. Tab moves through the nodes; arrow keys move one; C starts a connection; Enter opens its options or finishes a connection; Delete removes it.", count())
                on:pointerdown=on_down on:pointermove=on_move on:pointerup=on_up on:pointercancel=on_cancel on:wheel=on_wheel
                on:dragover=move |ev: leptos::ev::DragEvent| ev.prevent_default() on:drop=on_drop on:keydown=on_key>
                <defs>
                    <pattern id="grid" width="20" height="20" patternUnits="userSpaceOnUse">
                        <circle cx="1" cy="1" r="1" class="grid-dot" />
                    </pattern>
                    <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                        <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
                    </marker>
                </defs>
                <g class="layer" transform=move || page.view.get().transform()>
                    <rect x="-4000" y="-4000" width="12000" height="12000" fill="url(#grid)" class="grid" />
                    <For each=edge_ids key=|e| e.clone() let:edge>
                        <EdgeView source=edge.0 target=edge.1 frame=frame />
                    </For>
                    {move || page.wire.get().map(|(a, b)| view! { <path class="wire" d=canvas::edge_path(a, b) /> })}
                    <For each=node_ids key=|id| id.clone() let:id>
                        <NodeView id=id frame=frame />
                    </For>
                </g>
            </svg>
            <Show when=move || count() == 0>
                <p class="canvas-empty">"Empty canvas. Add nodes from the palette above (click, or drag them here), then drag from a node's right port to another node's left port."</p>
            </Show>
            <div class="zoom" role="group" aria-label="Zoom">
                <button class="icon" aria-label="Zoom out" on:click=move |_| page.view.update(|v| *v = v.zoom_at(Point::new(200.0, 150.0), 1.0 / 1.2))>{icon(MINUS)}</button>
                <span class="zoom-level">{move || format!("{}%", canvas::num((page.view.get().zoom * 100.0).round()))}</span>
                <button class="icon" aria-label="Zoom in" on:click=move |_| page.view.update(|v| *v = v.zoom_at(Point::new(200.0, 150.0), 1.2))>{icon(PLUS)}</button>
                <button class="secondary small" aria-label="Fit the design in view" on:click=move |_| fit(ZOOM_MIN)>"Fit"</button>
                <span class="zoom-hint pointer-fine">"Ctrl/⌘ + wheel or pinch to zoom"</span>
                <span class="zoom-hint pointer-coarse">"One finger scrolls the page; two move and zoom the drawing"</span>
            </div>
        </div>
    }
}

/// One connection, with a wide invisible path over it so that it is easy to hit.
#[component]
fn EdgeView(source: String, target: String, frame: Memo<Option<Frame>>) -> impl IntoView {
    let page = expect_context::<Page>();
    let (s, t) = (source.clone(), target.clone());
    let d = move || {
        page.editor.with(|e| match (e.node(&s), e.node(&t)) {
            (Some(a), Some(b)) => canvas::edge_path(canvas::out_port(a), canvas::in_port(b)),
            _ => String::new(),
        })
    };
    let key = Selection::Edge(source.clone(), target.clone());
    let (fs, ft) = (source.clone(), target.clone());
    let class = move || {
        let mut c = String::from("edge");
        if page.selected.with(|s| s.as_ref() == Some(&key)) {
            c.push_str(" selected");
        }
        if frame.with(|f| {
            f.as_ref()
                .and_then(|f| f.edge.as_ref())
                .is_some_and(|(a, b)| *a == fs && *b == ft)
        }) {
            c.push_str(" acting");
        }
        c
    };
    let (ss, st) = (source.clone(), target.clone());
    view! {
        <g class=class data-edge=format!("{source}->{target}")>
            <path class="edge-line" d=d.clone() marker-end="url(#arrow)" />
            <path class="edge-hit" d=d
                on:pointerdown=move |ev: leptos::ev::PointerEvent| {
                    ev.stop_propagation();
                    page.selected.set(Some(Selection::Edge(ss.clone(), st.clone())));
                    page.say(format!("Selected the connection \"{ss}\" → \"{st}\". Delete removes it."), false);
                    focus(".canvas");
                } />
        </g>
    }
}

/// One node, focusable and announced by its kind, id and options.
#[component]
fn NodeView(id: String, frame: Memo<Option<Frame>>) -> impl IntoView {
    let page = expect_context::<Page>();
    let node = {
        let id = id.clone();
        Memo::new(move |_| page.editor.with(|e| e.node(&id).cloned()))
    };
    let kind = page
        .editor
        .with_untracked(|e| e.node(&id).map(|n| n.kind))
        .unwrap_or(NodeKind::Table);
    let title = words::kind_title(kind);
    let (sid, aid, fid, cid) = (id.clone(), id.clone(), id.clone(), id.clone());
    let selected = Memo::new(move |_| {
        page.selected
            .with(|s| matches!(s, Some(Selection::Node(n)) if *n == sid))
    });
    let acting = move || {
        frame.with(|f| {
            f.as_ref()
                .is_some_and(|f| f.node.as_deref() == Some(aid.as_str()))
        })
    };
    let crashed = {
        let id = id.clone();
        move || {
            frame.with(|f| {
                f.as_ref()
                    .is_some_and(|f| f.failure && f.node.as_deref() == Some(id.as_str()))
            })
        }
    };
    // A table whose rows the replay's step changed is lit beside the stage that acts.
    let changed = move || {
        frame.with(|f| {
            f.as_ref().is_some_and(|f| {
                node.with(|n| {
                    n.as_ref()
                        .and_then(|n| n.options.get("table"))
                        .and_then(|t| t.as_str())
                        .is_some_and(|t| f.changed.contains(t))
                })
            })
        })
    };
    // A table has an output port only where a job of the scenario reads it, and which table
    // a node stands for can change.
    let ports = page.editor.with_untracked(|e| e.ports().clone());
    let has_output =
        Memo::new(move |_| node.with(|n| n.as_ref().is_some_and(|n| ports.has_output(n))));
    let class = {
        let crashed = crashed.clone();
        move || {
            let mut c = format!("node kind-{}", kind.name());
            if selected.get() {
                c.push_str(" selected");
            }
            if acting() {
                c.push_str(" acting");
            }
            if crashed() {
                c.push_str(" crashed");
            }
            if changed() {
                c.push_str(" changed");
            }
            if page.connecting.with(|s| s.as_deref() == Some(cid.as_str())) {
                c.push_str(" source");
            }
            c
        }
    };
    let transform = move || {
        node.with(|n| {
            n.as_ref()
                .map(|n| {
                    let p = canvas::position(n);
                    format!("translate({} {})", canvas::num(p.x), canvas::num(p.y))
                })
                .unwrap_or_default()
        })
    };
    let summary = move || {
        let scenario = page.scenario.get_value();
        let palette = &scenario.scenario().palette;
        node.with(|n| {
            n.as_ref()
                .map(|n| words::node_summary(n, palette))
                .unwrap_or_default()
        })
    };
    let hit_r = move || canvas::num(canvas::port_hit_radius(page.view.get().zoom));
    view! {
        <g class=class transform=transform tabindex="0" role="button" data-node=id.clone()
            aria-pressed=move || selected.get().to_string()
            on:focus=move |_| {
                if page.selected.get_untracked() != Some(Selection::Node(fid.clone())) {
                    page.selected.set(Some(Selection::Node(fid.clone())));
                }
            }>
            <rect class="node-body" width=canvas::num(NODE_W) height=canvas::num(NODE_H) rx="10" />
            <rect class="node-stripe" width="6" height=canvas::num(NODE_H) rx="3" />
            // The texts name the node (kind, id, options); the spaces, not drawn, part them.
            <text class="node-kind" x="16" y="19">{title}" "</text>
            <text class="node-id" x="16" y="37">{id.clone()}" "</text>
            <text class="node-summary" x="16" y="56">{summary}</text>
            // A transparent circle around each port: the touch target, at least 24 CSS px wide.
            {canvas::has_input(kind).then(|| view! { <circle class="port-hit" cx="0" cy=canvas::num(NODE_H / 2.0) r=hit_r /> })}
            {move || has_output.get().then(|| view! { <circle class="port-hit" cx=canvas::num(NODE_W) cy=canvas::num(NODE_H / 2.0) r=hit_r /> })}
            {canvas::has_input(kind).then(|| view! { <circle class="port in" cx="0" cy=canvas::num(NODE_H / 2.0) r=canvas::num(PORT_R) /> })}
            {move || has_output.get().then(|| view! { <circle class="port out" cx=canvas::num(NODE_W) cy=canvas::num(NODE_H / 2.0) r=canvas::num(PORT_R) /> })}
            <Show when=crashed.clone()>
                <g class="crash-mark" transform=format!("translate({} -10)", canvas::num(NODE_W - 18.0))>
                    <circle r="12" cx="0" cy="0" />
                    <text x="0" y="5" text-anchor="middle" aria-hidden="true">"✕"</text>
                </g>
            </Show>
        </g>
    }
}

/// A palette button dropped on the drawing: a node of its kind where it fell.
fn drop_handler(page: Page) -> impl Fn(leptos::ev::DragEvent) + Copy + 'static {
    move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        if page.read_only() {
            return;
        }
        let Some(kind) = ev
            .data_transfer()
            .and_then(|dt| dt.get_data("application/x-pipeline-kind").ok())
            .and_then(|k| NodeKind::parse(&k))
        else {
            return;
        };
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let world = page.view.get_untracked().to_world(screen);
        let at = Point::new(world.x - NODE_W / 2.0, world.y - NODE_H / 2.0);
        let id = page
            .scenario
            .with_value(|s| {
                page.editor
                    .try_update(|e| e.add_node(s.scenario(), kind, Some(at)))
            })
            .unwrap_or_default();
        page.selected.set(Some(Selection::Node(id.clone())));
        page.say(format!("Added {} \"{id}\".", kind.describe()), false);
    }
}

/// The drawing's keys: move, connect, open the options, delete, zoom.
fn key_handler(page: Page) -> impl Fn(leptos::ev::KeyboardEvent) + Copy + 'static {
    move |ev: leptos::ev::KeyboardEvent| {
        // A read-only design takes the keys too: moving, connecting and deleting are refused
        // with a word (by the editor and the page), and the keyboard can still reach options.
        if ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
            return;
        }
        let selected = page.selected.get_untracked();
        let node = match &selected {
            Some(Selection::Node(id)) => Some(id.clone()),
            _ => None,
        };
        let step = if ev.shift_key() { 5 } else { 1 };
        let nudge = |dx: i32, dy: i32| {
            if let Some(id) = &node {
                page.editor.update(|e| e.nudge(id, dx * step, dy * step));
                page.reveal(id);
            }
        };
        match ev.key().as_str() {
            "Delete" | "Backspace" if selected.is_some() => {
                ev.prevent_default();
                page.delete_selection();
            }
            "ArrowLeft" if node.is_some() => {
                ev.prevent_default();
                nudge(-1, 0)
            }
            "ArrowRight" if node.is_some() => {
                ev.prevent_default();
                nudge(1, 0)
            }
            "ArrowUp" if node.is_some() => {
                ev.prevent_default();
                nudge(0, -1)
            }
            "ArrowDown" if node.is_some() => {
                ev.prevent_default();
                nudge(0, 1)
            }
            "Enter" | " " if node.is_some() => {
                ev.prevent_default();
                let id = node.unwrap_or_default();
                match page.connecting.get_untracked() {
                    Some(source) if source != id => page.connect(&source, &id),
                    _ => {
                        if !focus(".inspector input:checked") {
                            focus(".inspector input");
                        }
                    }
                }
            }
            "c" | "C" if node.is_some() => {
                let id = node.unwrap_or_default();
                let can = page
                    .editor
                    .with_untracked(|e| e.node(&id).map(|n| e.ports().has_output(n)))
                    .unwrap_or(false);
                if can {
                    page.start_connecting(&id);
                } else {
                    page.say(
                        format!(
                            "\"{id}\" is where data ends; connect into it from a job or consumer."
                        ),
                        true,
                    );
                }
            }
            "Escape" => {
                page.connecting.set(None);
                page.wire.set(None);
                page.notice.set(None);
            }
            "+" | "=" => page
                .view
                .update(|v| *v = v.zoom_at(Point::new(200.0, 150.0), 1.2)),
            "-" => page
                .view
                .update(|v| *v = v.zoom_at(Point::new(200.0, 150.0), 1.0 / 1.2)),
            _ => {}
        }
    }
}

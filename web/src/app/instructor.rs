//! The instructor's pages: signing in with a grader token, the list of classes, a class's
//! dashboard (the matrix, progress per scenario, the requirements missed most), a student's
//! attempts, and one attempt's design read-only on the canvas with its replay.
//!
//! The token is sent once to the server, which keeps it in an HttpOnly cookie; it is never
//! stored in the browser's storage nor put in a URL. The answers are read as JSON values:
//! these pages only show them.

use std::sync::Arc;

use leptos::prelude::*;
use serde_json::Value as Json;

use super::api::{self, grader};
use super::canvas_view::CanvasView;
use super::dom::load_once;
use super::page::Page;
use super::results::{ReplayPanel, ResultsPanel};
use super::router::Link;

fn text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

fn when(v: &Json) -> String {
    text(v).replace('T', " ").chars().take(16).collect()
}

/// `/instructor`: the sign-in form, or the classes once signed in.
#[component]
pub fn InstructorHome() -> impl IntoView {
    let who = RwSignal::new(None::<Option<String>>);
    leptos::task::spawn_local(async move {
        who.set(Some(grader::whoami().await.ok()));
    });
    view! {
        <section class="page instructor">
            {move || match who.get() {
                None => view! { <p class="muted" role="status">"Loading…"</p> }.into_any(),
                Some(None) => view! { <SignIn who=who /> }.into_any(),
                Some(Some(name)) => view! { <Classes name=name who=who /> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn SignIn(who: RwSignal<Option<Option<String>>>) -> impl IntoView {
    let token = NodeRef::<leptos::html::Input>::new();
    let error = RwSignal::new(None::<String>);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Some(input) = token.get_untracked() else {
            return;
        };
        let typed = input.value();
        // The token leaves the page's memory with the request: the field is emptied.
        input.set_value("");
        leptos::task::spawn_local(async move {
            match grader::sign_in(typed.trim()).await {
                Ok(name) => who.set(Some(Some(name))),
                Err(e) => error.set(Some(e.message)),
            }
        });
    };
    view! {
        <h1>"Instructor sign-in"</h1>
        <p>"Sign in with a grader token ("<code>"pipeline-builder token create --name NAME"</code>" makes one). The server keeps it in a cookie this page cannot read."</p>
        <form class="sign-in" on:submit=submit>
            <label for="grader-token">"Grader token"</label>
            <input id="grader-token" type="password" autocomplete="off" required=true node_ref=token />
            <button class="primary" type="submit">"Sign in"</button>
        </form>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
    }
}

#[component]
fn Classes(name: String, who: RwSignal<Option<Option<String>>>) -> impl IntoView {
    let classes = RwSignal::new(None::<Result<Vec<Json>, String>>);
    let reload = move || {
        leptos::task::spawn_local(async move {
            let answer = grader::get_json("/api/classes").await;
            classes.set(Some(
                answer
                    .map(|v| v.as_array().cloned().unwrap_or_default())
                    .map_err(|e| e.message),
            ));
        });
    };
    reload();
    let new_name = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let act = move |method: &'static str, url: String, body: Option<Json>| {
        leptos::task::spawn_local(async move {
            match grader::send_json(method, &url, body).await {
                Ok(_) => {
                    error.set(None);
                    reload();
                }
                Err(e) => error.set(Some(e.message)),
            }
        });
    };
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let name = new_name.get_untracked();
        new_name.set(String::new());
        act(
            "POST",
            "/api/classes".into(),
            Some(serde_json::json!({ "name": name })),
        );
    };
    let sign_out = move |_| {
        leptos::task::spawn_local(async move {
            grader::sign_out().await;
            who.set(Some(None));
        });
    };
    view! {
        <h1>"Classes"</h1>
        <p class="muted">{format!("Signed in as {name}. ")}<button class="link-button" on:click=sign_out>"Sign out"</button></p>
        <form class="new-class" on:submit=create>
            <label for="class-name">"New class"</label>
            <input id="class-name" type="text" maxlength="100" required=true
                prop:value=move || new_name.get() on:input=move |ev| new_name.set(event_target_value(&ev)) />
            <button class="primary" type="submit">"Create the class"</button>
        </form>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        {move || match classes.get() {
            None => view! { <p class="muted" role="status">"Loading the classes…"</p> }.into_any(),
            Some(Err(e)) => view! { <p class="error" role="alert">{e}</p> }.into_any(),
            Some(Ok(list)) if list.is_empty() => view! { <p>"No class yet."</p> }.into_any(),
            Some(Ok(list)) => view! {
                <table class="data classes">
                    <caption>"Your classes"</caption>
                    <thead><tr><th scope="col">"Class"</th><th scope="col">"Join code and page"</th><th scope="col">"Members"</th><th scope="col">"State"</th></tr></thead>
                    <tbody>{list.into_iter().map(|c| {
                        let id = text(&c["id"]);
                        let open = c["open"].as_bool().unwrap_or(false);
                        let url = format!("/api/classes/{id}/{}", if open { "close" } else { "reopen" });
                        let name = text(&c["name"]);
                        view! {
                            <tr data-class=id.clone()>
                                <td><Link href=format!("/instructor/classes/{id}")>{name}</Link></td>
                                <td><code>{text(&c["join_code"])}</code>" "<span class="join-url">{text(&c["join_url"])}</span></td>
                                <td>{text(&c["members"])}</td>
                                <td>{if open { "Open " } else { "Closed " }}
                                    <button class="secondary small" on:click=move |_| act("POST", url.clone(), None)>
                                        {if open { "Close" } else { "Reopen" }}
                                    </button>
                                </td>
                            </tr>
                        }
                    }).collect_view()}</tbody>
                </table>
            }.into_any(),
        }}
    }
}

fn state_words(state: &str) -> &'static str {
    match state {
        "passed" => "✓ passed",
        "tried" => "◐ tried",
        _ => "○ not tried",
    }
}

/// `/instructor/classes/{id}`: the matrix, sortable; progress per scenario; the requirements
/// missed most, each with the students who missed it; the CSV exports; the preview setting.
#[component]
pub fn ClassPage(id: String) -> impl IntoView {
    let key = id.clone();
    let loaded = load_once(async move {
        let class = grader::get_json(&format!("/api/classes/{key}")).await?;
        let matrix = grader::get_json(&format!("/api/classes/{key}/matrix")).await?;
        let missed = grader::get_json(&format!("/api/classes/{key}/missed")).await?;
        Ok::<_, api::ApiError>((class, matrix, missed))
    });
    view! {
        <section class="page wide instructor">
            <p class="crumbs"><Link href="/instructor".to_string()>"← Classes"</Link></p>
            {move || match loaded.get() {
                None => view! { <p class="muted" role="status">"Loading the class…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error" role="alert">{format!("The class could not be loaded: {}", e.message)}</p>
                    <p><Link href="/instructor".to_string()>"Sign in"</Link></p> }.into_any(),
                Some(Ok((class, matrix, missed))) => view! { <Dashboard id=id.clone() class=class matrix=matrix missed=missed /> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn Dashboard(id: String, class: Json, matrix: Json, missed: Json) -> impl IntoView {
    let scenarios: Vec<Json> = matrix["scenarios"].as_array().cloned().unwrap_or_default();
    let students: Vec<Json> = matrix["students"].as_array().cloned().unwrap_or_default();
    // The column sorted by (`name`, `passed`, or a scenario id) and whether it goes down.
    let sort = RwSignal::new(("name".to_string(), false));
    let rank = |state: &str| match state {
        "passed" => 2,
        "tried" => 1,
        _ => 0,
    };
    let sorted = move || {
        let (by, down) = sort.get();
        let mut rows = students.clone();
        rows.sort_by(|a, b| {
            let order = match by.as_str() {
                "name" => text(&a["display_name"]).to_lowercase().cmp(&text(&b["display_name"]).to_lowercase()),
                "passed" => a["passed"].as_u64().cmp(&b["passed"].as_u64()),
                scenario => {
                    let of = |row: &Json| {
                        row["cells"].as_array().and_then(|cells| {
                            cells.iter().find(|c| c["scenario"] == scenario).map(|c| {
                                (rank(c["state"].as_str().unwrap_or("")), c["attempts"].as_u64())
                            })
                        })
                    };
                    of(a).cmp(&of(b))
                }
            };
            if down { order.reverse() } else { order }
        });
        rows
    };
    let header = move |key: String, label: String| {
        let k = key.clone();
        let aria = move || {
            let (by, down) = sort.get();
            if by == k { if down { "descending" } else { "ascending" } } else { "none" }
        };
        view! {
            <th scope="col" aria-sort=aria>
                <button class="link-button sort" on:click=move |_| sort.update(|(by, down)| {
                    if *by == key { *down = !*down } else { *by = key.clone(); *down = false }
                })>{label}</button>
            </th>
        }
    };
    let preview = RwSignal::new(text(&class["preview"]));
    let saved = RwSignal::new(None::<String>);
    let pid = id.clone();
    let set_preview = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        let url = format!("/api/classes/{pid}");
        preview.set(value.clone());
        leptos::task::spawn_local(async move {
            let done = grader::send_json("PATCH", &url, Some(serde_json::json!({ "preview": value }))).await;
            saved.set(Some(match done {
                Ok(_) => "Saved: students see it when they next open the app.".to_string(),
                Err(e) => e.message,
            }));
        });
    };
    let columns: Vec<(String, String)> = scenarios
        .iter()
        .map(|s| (text(&s["scenario"]), text(&s["title"])))
        .collect();
    let cid = id.clone();
    view! {
        <h1>{text(&class["name"])}</h1>
        <p>"Join page: "<span class="join-url">{text(&class["join_url"])}</span>" · code "<code>{text(&class["join_code"])}</code>
            {if class["open"] == Json::Bool(true) { " · open" } else { " · closed" }}</p>
        <p class="exports">"Download: "
            <a href=format!("/api/classes/{id}/matrix?format=csv") download="matrix.csv">"the matrix (CSV)"</a>" · "
            <a href=format!("/api/classes/{id}/attempts?format=csv") download="attempts.csv">"every attempt (CSV)"</a></p>
        <p>
            <label for="preview-setting">"Live preview for students: "</label>
            <select id="preview-setting" on:change=set_preview prop:value=move || preview.get()>
                <option value="everything">"every requirement"</option>
                <option value="lacks">"only what the design lacks"</option>
                <option value="nothing">"none"</option>
            </select>
            <span role="status" class="muted">{move || saved.get()}</span>
        </p>
        <h2>"Progress"</h2>
        <table class="data progress">
            <caption>{format!("{} students", text(&matrix["members"]))}</caption>
            <thead><tr><th scope="col">"Scenario"</th><th scope="col">"Passed"</th><th scope="col">"Tried"</th><th scope="col">"Not tried"</th><th scope="col">"Results from an older version"</th></tr></thead>
            <tbody>{scenarios.iter().map(|s| view! {
                <tr data-scenario=text(&s["scenario"])><th scope="row">{text(&s["title"])}</th>
                    <td>{text(&s["passed"])}</td><td>{text(&s["tried"])}</td><td>{text(&s["not_tried"])}</td><td>{text(&s["outdated_attempts"])}</td></tr>
            }).collect_view()}</tbody>
        </table>
        <h2>"Students"</h2>
        <div class="table-wrap">
        <table class="data matrix">
            <caption>"Students by scenario: state and attempts; sort by any column"</caption>
            <thead><tr>
                {header("name".into(), "Student".into())}
                {header("passed".into(), "Passed".into())}
                {columns.iter().map(|(id, title)| header(id.clone(), title.clone())).collect_view()}
            </tr></thead>
            <tbody>{move || sorted().into_iter().map(|row| {
                let student = text(&row["student"]);
                let cells = row["cells"].as_array().cloned().unwrap_or_default();
                let name = text(&row["display_name"]);
                view! {
                    <tr data-student=student.clone()>
                        <th scope="row"><Link href=format!("/instructor/classes/{cid}/students/{student}")>{name}</Link></th>
                        <td>{text(&row["passed"])}</td>
                        {cells.into_iter().map(|c| {
                            let state = text(&c["state"]);
                            let attempts = c["attempts"].as_u64().unwrap_or(0);
                            let mut words = state_words(&state).to_string();
                            if attempts > 0 { words.push_str(&format!(" · {attempts} attempt(s)")); }
                            if let Some(n) = c["attempts_before_first_pass"].as_u64() { words.push_str(&format!(", {n} before the first pass")); }
                            if c["outdated_attempts"].as_u64().unwrap_or(0) > 0 { words.push_str(" · older version"); }
                            view! { <td class=format!("cell {state}") data-scenario=text(&c["scenario"]) title=when(&c["last_attempt_at"])>{words}</td> }
                        }).collect_view()}
                    </tr>
                }
            }).collect_view()}</tbody>
        </table>
        </div>
        <h2>"Requirements missed most"</h2>
        {missed.as_array().cloned().unwrap_or_default().into_iter().filter(|s| s["requirements"].as_array().is_some_and(|r| !r.is_empty())).map(|s| {
            let cid = id.clone();
            view! {
                <h3>{text(&s["title"])}</h3>
                <ul class="missed">{s["requirements"].as_array().cloned().unwrap_or_default().into_iter().map(|r| {
                    let share = (r["share"].as_f64().unwrap_or(0.0) * 100.0).round();
                    let cid = cid.clone();
                    view! {
                        <li data-requirement=text(&r["requirement"])>
                            <strong>{text(&r["text"])}</strong>
                            {format!(" — missed by {} ({share}% of those who tried), {} still missing: ", text(&r["students"]), text(&r["still_missing"]))}
                            {r["missed_by"].as_array().cloned().unwrap_or_default().into_iter().map(|m| {
                                let student = text(&m["student"]);
                                let name = text(&m["display_name"]);
                                view! { <Link href=format!("/instructor/classes/{cid}/students/{student}")>{name}</Link>" " }
                            }).collect_view()}
                        </li>
                    }
                }).collect_view()}</ul>
            }
        }).collect_view()}
    }
}

/// `/instructor/classes/{id}/students/{student}`: a student's attempts with their verdicts.
#[component]
pub fn StudentPage(class: String, student: String) -> impl IntoView {
    let url = format!("/api/classes/{class}/students/{student}/attempts");
    let loaded = load_once(async move { grader::get_json(&url).await });
    view! {
        <section class="page instructor">
            <p class="crumbs"><Link href=format!("/instructor/classes/{class}")>"← The class"</Link></p>
            {move || match loaded.get() {
                None => view! { <p class="muted" role="status">"Loading the attempts…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error" role="alert">{e.message}</p> }.into_any(),
                Some(Ok(body)) => {
                    let attempts = body["attempts"].as_array().cloned().unwrap_or_default();
                    let class = class.clone();
                    view! {
                        <h1>{text(&body["display_name"])}</h1>
                        <p class="muted">{format!("{} attempt(s), oldest first", attempts.len())}</p>
                        <ol class="attempts">{attempts.into_iter().map(|a| {
                            let missed: Vec<String> = a["missed"].as_array().map(|m| m.iter().map(text).collect()).unwrap_or_default();
                            let regraded = a["regrades"].as_array().and_then(|r| r.iter().find(|g| g["current"] == Json::Bool(true))).map(|g| {
                                format!("Regraded against the current version: {} of {}{}.", text(&g["score"]), text(&g["max_score"]), if g["passed"] == Json::Bool(true) { ", passed" } else { "" })
                            });
                            view! {
                                <li class="attempt" data-attempt=text(&a["id"])>
                                    <p><strong>{text(&a["scenario"])}</strong>{format!(" · {} · {} of {}", when(&a["created_at"]), text(&a["score"]), text(&a["max_score"]))}
                                        {if a["passed"] == Json::Bool(true) { " · ✓ passed".to_string() } else { format!(" · ✗ missed {}", missed.join(", ")) }}</p>
                                    {(a["outdated"] == Json::Bool(true)).then(|| view! { <p class="muted">"This verdict is from an older version of the scenario."</p> })}
                                    {regraded.map(|r| view! { <p class="muted">{r}</p> })}
                                    <p><Link href=format!("/instructor/classes/{class}/attempts/{}", text(&a["id"]))>"Open the design and its replay"</Link></p>
                                </li>
                            }
                        }).collect_view()}</ol>
                    }.into_any()
                }
            }}
        </section>
    }
}

/// `/instructor/classes/{id}/attempts/{attempt}`: the attempt's design read-only on the canvas,
/// with its verdict and the replay of each missed requirement.
#[component]
pub fn AttemptPage(class: String, attempt: String) -> impl IntoView {
    let url = format!("/api/classes/{class}/attempts/{attempt}");
    let loaded = load_once(async move {
        let body = grader::get_json(&url).await.map_err(|e| e.message)?;
        let scenario = api::scenario(&text(&body["scenario"])).await.map_err(|e| e.message)?;
        let design = serde_json::from_value(body["design"].clone()).map_err(|e| e.to_string())?;
        let verdict = serde_json::from_value(body["verdict"].clone()).map_err(|e| e.to_string())?;
        Ok::<_, String>((body, Arc::new(scenario), design, verdict))
    });
    view! {
        {move || match loaded.get() {
            None => view! { <section class="page"><p class="muted" role="status">"Loading the attempt…"</p></section> }.into_any(),
            Some(Err(e)) => view! { <section class="page"><p class="error" role="alert">{format!("The attempt could not be opened: {e}")}</p></section> }.into_any(),
            Some(Ok((body, scenario, design, verdict))) => {
                let page = Page::viewer(scenario.clone(), design, verdict);
                provide_context(page);
                let back = format!("/instructor/classes/{class}/students/{}", text(&body["student"]));
                view! {
                    <div class="workspace viewer">
                        <aside class="brief" aria-label="The attempt">
                            <p class="crumbs"><Link href=back>"← The student's attempts"</Link></p>
                            <h1>{scenario.title.clone()}</h1>
                            <p class="muted">{format!("Attempt of {} · read-only", when(&body["created_at"]))}</p>
                        </aside>
                        <section class="stage" aria-label="The design">
                            <CanvasView />
                            <div class="panel"><ResultsPanel /></div>
                        </section>
                        <aside class="side" aria-label="Replay" class:sheet-open=move || page.replay.with(Option::is_some) class:replaying=move || page.replay.with(Option::is_some)>
                            {move || page.replay.with(Option::is_some).then(|| view! { <ReplayPanel /> })}
                        </aside>
                    </div>
                }.into_any()
            }
        }}
    }
}

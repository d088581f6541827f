//! The join page, `/join/{code}`: a student gives the name their instructor will see and
//! joins the class; from then on the app works in that class.

use leptos::prelude::*;

use super::api;
use super::page::CurrentClass;
use super::router::Link;

#[component]
pub fn JoinPage(code: String) -> impl IntoView {
    let current = expect_context::<CurrentClass>();
    let name = NodeRef::<leptos::html::Input>::new();
    let error = RwSignal::new(None::<String>);
    let joined = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let shown = code.clone();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if busy.get_untracked() {
            return;
        }
        let code = code.clone();
        let typed = name.get_untracked().map(|i| i.value()).unwrap_or_default();
        busy.set(true);
        error.set(None);
        leptos::task::spawn_local(async move {
            match api::join(&code, typed.trim()).await {
                Ok(class) => {
                    api::class_choice::set(&class.id);
                    joined.set(Some(class.name.clone()));
                    current.0.set(Some(class));
                }
                Err(e) => error.set(Some(e.message)),
            }
            busy.set(false);
        });
    };
    view! {
        <section class="page narrow join">
            <h1>"Join a class"</h1>
            {move || match joined.get() {
                Some(class) => view! {
                    <p role="status">{format!("You are in \"{class}\". Your checks now count for it.")}</p>
                    <p><Link href="/".to_string()>"Go to the scenarios"</Link></p>
                }.into_any(),
                None => view! {
                    <p>"Class code "<code>{shown.clone()}</code></p>
                    <form class="join-form" on:submit=submit.clone()>
                        <label for="display-name">"Your name, as your instructor will see it"</label>
                        <input id="display-name" type="text" maxlength="60" required=true autocomplete="name" node_ref=name />
                        <button class="primary" type="submit" disabled=move || busy.get()>"Join"</button>
                    </form>
                    {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                }.into_any(),
            }}
        </section>
    }
}

//! The discrepancy list: filters (a plain GET form), counts per status and
//! class (each a link to that filter), most severe then oldest first, one
//! keyset page at a time, and the CSV export of the whole filtered set.

use super::cells::{AmountCell, IdText, When, use_zone};
use super::{ErrorNote, Frame, Viewer, query_filter};
use crate::ageing::AgeBucket;
use crate::api::{AssignTicket, list_tickets};
use crate::codes::{Code, Codes};
use crate::filter::QueryFilter;
use crate::i18n::{Msg, in_zone, ticket_status, tr};
use crate::tickets::{CLASSES, SEVERITIES, STATUSES, TicketFilter, TicketPage};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn TicketsPage() -> impl IntoView {
    let filter = query_filter::<TicketFilter>();
    // `a` assigns the current row to the viewer, through the same server
    // function as the ticket page; the list reloads to show the owner.
    let assign = ServerAction::<AssignTicket>::new();
    let assigned = super::ticket::successes(assign);
    let page = Resource::new(move || (filter(), assigned.get()), |(f, _)| list_tickets(f));
    view! {
        <Frame allow=Role::ALL>
            <TicketsBody assign=assign page=page/>
        </Frame>
    }
}

/// A ticket's page, carrying the list's filters (and page) so the page can
/// walk the same queue and lead back to it.
pub fn ticket_href(id: &str, f: &TicketFilter) -> String {
    let q = f.query_with_after(f.after.as_deref());
    if q.is_empty() {
        format!("/tickets/{id}")
    } else {
        format!("/tickets/{id}?{q}")
    }
}

pub fn list_href(f: &TicketFilter) -> String {
    let q = f.query_with_after(f.after.as_deref());
    if q.is_empty() {
        "/tickets".into()
    } else {
        format!("/tickets?{q}")
    }
}

#[component]
fn TicketsBody(
    assign: ServerAction<AssignTicket>,
    page: super::Loaded<TicketPage>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let filter = query_filter::<TicketFilter>();
    super::bulk::provide_picked();
    // The row the keys work on, by its place on the page; none after the
    // list's filter or page changes.
    let current = RwSignal::new(None::<usize>);
    let listed = Memo::new(move |_| list_href(&filter()));
    Effect::new(move |_| {
        listed.track();
        current.set(None);
    });
    let help = NodeRef::<leptos::html::Dialog>::new();
    list_keys(current, assign, user.username.clone(), help);
    let assign_result = move || {
        assign.value().get().map(|r| match r {
            Ok(()) => view! {
                <p class="result" id="list-result" role="status">{tr(lang, "Assigned to you.", "已分配给您。")}</p>
            }
            .into_any(),
            Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
        })
    };
    let title = Msg::Discrepancies.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        {move || view! { <FilterForm f=filter() lang=lang/> }}
        <KeysHelp help=help lang=lang/>
        <div id="list-status" aria-live="polite">{assign_result}</div>
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let f = filter();
                match page.await {
                    Ok(p) => view! { <Results page=p f=f lang=lang current=current/> }.into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Choice(
    name: &'static str,
    options: &'static [&'static str],
    current: Option<String>,
    any: &'static str,
) -> impl IntoView {
    view! {
        <select name=name id=format!("f-{name}")>
            <option value="">{any}</option>
            {options.iter().map(|o| view! {
                <option value=*o selected=current.as_deref() == Some(*o)>{*o}</option>
            }).collect_view()}
        </select>
    }
}

#[component]
fn FilterForm(f: TicketFilter, lang: Lang) -> impl IntoView {
    let any = Msg::Any.text(lang);
    let csv = format!("/tickets.csv?{}", f.query_with_after(None));
    view! {
        <form method="get" action="/tickets" class="row card filters" id="ticket-filters">
            <label>{tr(lang, "Class", "差异类型")}<Choice name="class" options=CLASSES current=f.class.clone() any=any/></label>
            <label>{tr(lang, "Severity", "严重程度")}<Choice name="severity" options=SEVERITIES current=f.severity.clone() any=any/></label>
            <label>{Msg::Status.text(lang)}
                <select name="status" id="f-status">
                    <option value="">{any}</option>
                    {STATUSES.iter().map(|s| view! {
                        <option value=*s selected=f.status.as_deref() == Some(*s)>{ticket_status(s, lang)}</option>
                    }).collect_view()}
                </select>
            </label>
            <label>{Msg::Provider.text(lang)}<input name="provider" id="f-provider" size="10" value=f.provider.clone()/></label>
            <label>{Msg::BusinessDay.text(lang)}<input name="day" id="f-day" type="date" value=f.day.clone()/></label>
            <label>{tr(lang, "Run", "对账批次")}<input name="run" id="f-run" size="12" value=f.run.clone()/></label>
            <label>{tr(lang, "Owner (- = none)", "负责人（- 表示未分配）")}<input name="owner" id="f-owner" size="10" value=f.owner.clone()/></label>
            <label>{tr(lang, "Payment, order or txn id (or its start)", "支付单号、订单号或渠道流水号（或其开头）")}<input name="q" id="f-q" size="18" value=f.q.clone()/></label>
            <label>{Msg::Age.text(lang)}
                <select name="age" id="f-age">
                    <option value="">{any}</option>
                    {AgeBucket::ALL.into_iter().map(|b| view! {
                        <option value=b.as_str() selected=f.age.as_deref() == Some(b.as_str())>{b.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <button type="submit" id="apply-filters">{Msg::Filter.text(lang)}</button>
            <a href="/tickets">{Msg::Clear.text(lang)}</a>
            <a href=csv id="export-csv" rel="external" download="reckon-tickets.csv">{tr(lang, "Export CSV", "导出 CSV")}</a>
        </form>
    }
}

#[component]
fn Results(
    page: TicketPage,
    f: TicketFilter,
    lang: Lang,
    current: RwSignal<Option<usize>>,
) -> impl IntoView {
    // Redrawn after `a`: the keyboard stays on its row.
    Effect::new(move |_| {
        if let Some(i) = current.get_untracked() {
            request_animation_frame(move || focus_row(i, false));
        }
    });
    let counts = |pairs: Vec<(String, i64)>, key: &'static str, f: &TicketFilter| {
        pairs
            .into_iter()
            .map(|(value, n)| {
                let href = list_href(&f.with(key, Some(&value)));
                let label = match key {
                    "status" => ticket_status(&value, lang).to_owned(),
                    "class" => Codes::Class.shown(&value, lang),
                    _ => value.clone(),
                };
                view! { <a class="count" href=href data-count=format!("{key}:{value}")>{label} " " <strong>{n}</strong></a> }
            })
            .collect_view()
    };
    let next = page.next.clone().map(|n| {
        let mut g = f.clone();
        g.after = Some(n);
        list_href(&g)
    });
    let by_status = counts(page.by_status.clone(), "status", &f);
    let by_class = counts(page.by_class.clone(), "class", &f);
    let on_page: Vec<String> = page.items.iter().map(|t| t.id.clone()).collect();
    let empty = page.items.is_empty().then(|| {
        super::empty::empty_note(
            super::empty::narrowed(&f),
            ("discrepancies", "差异工单"),
            "/tickets",
            [
                (
                    "No discrepancies: every statement reconciled so far matched, or none has been reconciled yet.",
                    "没有差异工单：已对账的账单全部一致，或尚未对账。",
                ),
                ("Reconcile a statement on Runs.", "到“对账批次”对账。"),
            ],
            "/runs",
            lang,
        )
    });
    let zone = use_zone();
    view! {
        <super::bulk::BulkBar f=f.clone() total=page.total lang=lang/>
        <section class="counts">
            <p id="ticket-total">{tr(lang, "Matching tickets:", "符合条件的工单：")} " " <strong>{page.total}</strong></p>
            <p class="by-status">{by_status}</p>
            <p class="by-class">{by_class}</p>
        </section>
        <table class="grid compact" id="tickets">
            <thead><tr>
                <th><super::bulk::PickPage ids=on_page/></th>
                <th>{tr(lang, "Sev.", "级别")}</th>
                <th>{tr(lang, "Class", "差异类型")}</th>
                <th>{Msg::Status.text(lang)}</th>
                <th>{Msg::Provider.text(lang)}</th>
                <th>{tr(lang, "Day", "业务日")}</th>
                <th>{Msg::Payment.text(lang)}</th>
                <th>{Msg::TxnId.text(lang)}</th>
                <th class="amount">{tr(lang, "Reckon", "本地")}</th>
                <th class="amount">{tr(lang, "Statement", "账单")}</th>
                <th>{Msg::Owner.text(lang)}</th>
                <th class="num">{Msg::Age.text(lang)}</th>
                <th>{in_zone(lang, "Found", "发现时间", &zone)}</th>
            </tr></thead>
            <tbody>
                {page.items.into_iter().enumerate().map(|(i, t)| {
                    let href = ticket_href(&t.id, &f);
                    let age = t.age_days.map(|d| format!("{d} {}", Msg::AgeDays.text(lang))).unwrap_or_default();
                    view! {
                        <tr data-ticket=t.id.clone() data-class=t.class.clone() class=format!("sev-{}", t.severity.to_lowercase()) class:overdue=t.overdue
                            class:current=move || current.get() == Some(i)
                            aria-current=move || (current.get() == Some(i)).then_some("true")
                            tabindex="-1">
                            <td><super::bulk::Pick id=t.id.clone()/></td>
                            <td><span class="badge"><Code set=Codes::Severity code=t.severity.clone() lang=lang/></span></td>
                            <td><a href=href class="open-ticket"><Code set=Codes::Class code=t.class.clone() lang=lang/></a></td>
                            <td class="status">{ticket_status(&t.status, lang)}</td>
                            <td>{t.provider.clone()}</td>
                            <td class="when">{t.business_date.clone().unwrap_or_default()}</td>
                            <td><IdText id=t.payment_no.clone().unwrap_or_default() lang=lang/></td>
                            <td><IdText id=t.provider_txn_id.clone().unwrap_or_default() lang=lang/></td>
                            <AmountCell amount=t.local_amount.clone()/>
                            <AmountCell amount=t.provider_amount.clone()/>
                            <td>{t.owner.clone().unwrap_or_default()}</td>
                            <td class="num age" data-age=t.age_days.map(|d| d.to_string())>
                                {age}
                                {t.overdue.then(|| view! { " " <span class="badge overdue-badge">{Msg::Overdue.text(lang)}</span> })}
                            </td>
                            <td class="when"><When at=t.found_at zone=zone.clone() short=true/></td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        {empty}
        {next.map(|href| view! { <p><a href=href id="next-page">{tr(lang, "Next page →", "下一页 →")}</a></p> })}
    }
}

/// The list's keys, and the button and dialog that list them.
#[component]
fn KeysHelp(help: NodeRef<leptos::html::Dialog>, lang: Lang) -> impl IntoView {
    let keys: [(&str, &str); 6] = [
        ("j / k", tr(lang, "next / previous row", "下一行 / 上一行")),
        (
            "x",
            tr(lang, "tick the row (for bulk work)", "勾选该行（批量操作）"),
        ),
        ("o / Enter", tr(lang, "open the ticket", "打开工单")),
        ("a", tr(lang, "assign the ticket to me", "将工单分配给我")),
        (
            "c",
            tr(lang, "open the ticket to comment", "打开工单并填写备注"),
        ),
        (
            "?",
            tr(
                lang,
                "this list of keys (Esc closes it)",
                "显示本快捷键列表（Esc 关闭）",
            ),
        ),
    ];
    view! {
        <p class="list-keys">
            <button type="button" class="link" id="keys-help-open" aria-haspopup="dialog"
                on:click=move |_| open_help(help)>
                {Msg::KeyboardShortcuts.text(lang)} " (?)"
            </button>
            <span class="hint">{tr(lang,
                "j/k rows, x tick, o open, a assign to me, c comment",
                "j/k 切换行，x 勾选，o 打开，a 分配给我，c 备注")}</span>
        </p>
        <dialog id="keys-help" node_ref=help aria-labelledby="keys-help-title">
            <h2 id="keys-help-title">{Msg::KeyboardShortcuts.text(lang)}</h2>
            <dl>
                {keys.into_iter().map(|(k, what)| view! {
                    <dt>{k.split(" / ").map(|k| view! { <kbd>{k}</kbd> }).collect_view()}</dt>
                    <dd>{what}</dd>
                }).collect_view()}
            </dl>
            <p class="hint">{tr(lang,
                "Not while typing in a field, nor with Ctrl, Alt or Cmd held.",
                "在输入框中输入时、或按住 Ctrl、Alt、Cmd 时不生效。")}</p>
            <button type="button" id="keys-help-close" on:click=move |_| close_help(help)>
                {tr(lang, "Close", "关闭")}
            </button>
        </dialog>
    }
}

fn open_help(help: NodeRef<leptos::html::Dialog>) {
    #[cfg(feature = "hydrate")]
    if let Some(d) = help.get_untracked()
        && !d.open()
    {
        let _ = d.show_modal();
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = help;
}

fn close_help(help: NodeRef<leptos::html::Dialog>) {
    #[cfg(feature = "hydrate")]
    if let Some(d) = help.get_untracked() {
        d.close();
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = help;
}

/// Moves the keyboard to the list's row `i` (only if nothing else holds it,
/// unless `take`), scrolled into view.
fn focus_row(i: usize, take: bool) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let doc = document();
        let free = doc
            .active_element()
            .is_none_or(|el| matches!(el.tag_name().as_str(), "BODY" | "MAIN" | "TR"));
        if !(take || free) {
            return;
        }
        if let Some(row) = doc
            .query_selector_all("#tickets tbody tr[data-ticket]")
            .ok()
            .and_then(|rows| rows.item(i as u32))
            .and_then(|row| row.dyn_into::<leptos::web_sys::HtmlElement>().ok())
        {
            let _ = row.focus();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (i, take);
}

/// The list's keys: `j`/`k` move the current row, `x` ticks it, `o` (or
/// Enter on it) opens it, `a` assigns it to the viewer, `c` opens it at the
/// comment box, `?` lists the keys. Never while typing in a field, nor with
/// Ctrl, Alt or Cmd held (the browser's own shortcuts stay).
fn list_keys(
    current: RwSignal<Option<usize>>,
    assign: ServerAction<AssignTicket>,
    me: String,
    help: NodeRef<leptos::html::Dialog>,
) {
    #[cfg(feature = "hydrate")]
    {
        use leptos::web_sys::{Element, HtmlElement, HtmlInputElement};
        use wasm_bindgen::JsCast;
        let navigate = leptos_router::hooks::use_navigate();
        let handle = window_event_listener(leptos::ev::keydown, move |e| {
            if e.ctrl_key() || e.meta_key() || e.alt_key() || e.default_prevented() {
                return;
            }
            if help.get_untracked().is_some_and(|d| d.open()) {
                return;
            }
            let target = e.target().and_then(|t| t.dyn_into::<Element>().ok());
            let tag = target.as_ref().map(Element::tag_name).unwrap_or_default();
            let typing = match tag.as_str() {
                "TEXTAREA" | "SELECT" => true,
                // A tick box or a button takes no letters.
                "INPUT" => target
                    .as_ref()
                    .and_then(|t| t.dyn_ref::<HtmlInputElement>())
                    .is_none_or(|i| {
                        !matches!(
                            i.type_().as_str(),
                            "checkbox" | "radio" | "button" | "submit" | "reset"
                        )
                    }),
                _ => target
                    .as_ref()
                    .and_then(|t| t.dyn_ref::<HtmlElement>())
                    .is_some_and(HtmlElement::is_content_editable),
            };
            if typing {
                return;
            }
            let key = e.key();
            if key == "?" {
                e.prevent_default();
                open_help(help);
                return;
            }
            let rows = document()
                .query_selector_all("#tickets tbody tr[data-ticket]")
                .ok();
            let n = rows.as_ref().map_or(0, |r| r.length() as usize);
            if n == 0 {
                return;
            }
            let at = current.get_untracked().filter(|i| *i < n);
            let row = |i: usize| {
                rows.as_ref()
                    .and_then(|r| r.item(i as u32))
                    .and_then(|r| r.dyn_into::<Element>().ok())
            };
            let href = |i: usize| {
                row(i)
                    .and_then(|r| r.query_selector("a.open-ticket").ok().flatten())
                    .and_then(|a| a.get_attribute("href"))
            };
            match key.as_str() {
                "j" | "k" => {
                    let to = match (at, key.as_str()) {
                        (None, _) => 0,
                        (Some(i), "j") => (i + 1).min(n - 1),
                        (Some(i), _) => i.saturating_sub(1),
                    };
                    e.prevent_default();
                    current.set(Some(to));
                    focus_row(to, true);
                }
                "x" => {
                    if let Some(pick) = at
                        .and_then(row)
                        .and_then(|r| r.query_selector("input.pick").ok().flatten())
                        .and_then(|p| p.dyn_into::<HtmlElement>().ok())
                    {
                        e.prevent_default();
                        pick.click();
                    }
                }
                // Enter opens the row only when the row itself has the
                // keyboard: on a link or a button it is theirs.
                "o" | "Enter" | "c" => {
                    if key == "Enter" && !matches!(tag.as_str(), "TR" | "BODY" | "MAIN") {
                        return;
                    }
                    if let Some(to) = at.and_then(href) {
                        e.prevent_default();
                        let to = if key == "c" {
                            format!("{to}#comment")
                        } else {
                            to
                        };
                        navigate(&to, Default::default());
                    }
                }
                "a" => {
                    if let Some(id) = at
                        .and_then(row)
                        .and_then(|r| r.get_attribute("data-ticket"))
                    {
                        e.prevent_default();
                        assign.dispatch(AssignTicket {
                            id,
                            owner: me.clone(),
                        });
                    }
                }
                _ => {}
            }
        });
        on_cleanup(move || handle.remove());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (current, assign, me, help);
}

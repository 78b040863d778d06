//! The codes Reckon stores and shows (ticket classes, states, alert kinds…)
//! in words, English and Chinese, in one place. Staff say the codes
//! themselves, so a page keeps the code at hand: an English page shows the
//! code with its words as a tooltip, a Chinese page the words with the code
//! as a tooltip (and in `data-code`).

use crate::types::Lang;
use leptos::prelude::*;

/// The set a code belongs to: the same code means different things in
/// different sets (a PENDING payment waits for the payer, a PENDING
/// proposal for a supervisor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codes {
    /// A discrepancy ticket's class.
    Class,
    /// A ticket's or an alert's severity (either case).
    Severity,
    TicketStatus,
    PaymentStatus,
    RefundStatus,
    /// A stored callback's processing state.
    CallbackStatus,
    /// A stored callback's signature check.
    Verify,
    ProposalStatus,
    /// A fix a proposal executes.
    FixKind,
    /// A reconciliation run's state.
    RunStatus,
    AlertKind,
}

/// Every code of each set the console shows, for the tests that hold the
/// catalogue complete (the server's own lists are checked against these).
pub const ALERT_KINDS: &[&str] = &[
    "audit_tampered",
    "callback_conflict",
    "callback_dead",
    "conflict",
    "events_undelivered",
    "local_only",
    "out_of_order",
    "outbox_dead",
    "paid_after_close",
    "queries_exhausted",
    "refund_mismatch",
    "refund_queries_exhausted",
    "sink_failing",
    "sla_overdue",
    "statement_missing",
    "statement_pull_failed",
    "webhooks_refused_spike",
];
pub const PAYMENT_STATUSES: &[&str] = &[
    "CREATED",
    "PENDING",
    "SUCCEEDED",
    "FAILED",
    "REFUNDING",
    "REFUNDED",
    "CLOSED",
];
pub const REFUND_STATUSES: &[&str] = &["REQUESTED", "PENDING", "SUCCEEDED", "FAILED"];
pub const CALLBACK_STATUSES: &[&str] = &["RECEIVED", "PROCESSING", "SUCCESS", "FAILED", "DEAD"];
/// Only a verified callback is stored (the others are refused webhooks).
pub const VERIFY_RESULTS: &[&str] = &["VERIFIED"];
pub const PROPOSAL_STATUSES: &[&str] = &[
    "PENDING",
    "APPROVED",
    "REJECTED",
    "EXECUTED",
    "FAILED",
    "SUPERSEDED",
    "EXPIRED",
];
pub const RUN_STATUSES: &[&str] = &["RUNNING", "COMPLETED", "FAILED"];

impl Codes {
    /// Every code of the set.
    pub fn all(self) -> Vec<&'static str> {
        match self {
            Codes::Class => crate::tickets::CLASSES.to_vec(),
            Codes::Severity => [crate::tickets::SEVERITIES, crate::console::ALERT_SEVERITIES]
                .concat()
                .to_vec(),
            Codes::TicketStatus => crate::tickets::STATUSES.to_vec(),
            Codes::PaymentStatus => PAYMENT_STATUSES.to_vec(),
            Codes::RefundStatus => REFUND_STATUSES.to_vec(),
            Codes::CallbackStatus => CALLBACK_STATUSES.to_vec(),
            Codes::Verify => VERIFY_RESULTS.to_vec(),
            Codes::ProposalStatus => PROPOSAL_STATUSES.to_vec(),
            Codes::FixKind => crate::tickets::FixKind::ALL
                .iter()
                .map(|k| k.as_str())
                .collect(),
            Codes::RunStatus => RUN_STATUSES.to_vec(),
            Codes::AlertKind => ALERT_KINDS.to_vec(),
        }
    }

    pub const ALL: [Codes; 11] = [
        Codes::Class,
        Codes::Severity,
        Codes::TicketStatus,
        Codes::PaymentStatus,
        Codes::RefundStatus,
        Codes::CallbackStatus,
        Codes::Verify,
        Codes::ProposalStatus,
        Codes::FixKind,
        Codes::RunStatus,
        Codes::AlertKind,
    ];

    /// The code in words, English and Chinese; `None` for a code this
    /// catalogue does not know (shown as it is).
    pub fn words(self, code: &str) -> Option<(&'static str, &'static str)> {
        Some(match self {
            Codes::Class => match code {
                "PROVIDER_ONLY" => ("Only on the statement", "仅渠道有"),
                "LOCAL_ONLY" => ("Only in Reckon", "仅本地有"),
                "AMOUNT_MISMATCH" => ("Amounts differ", "金额不符"),
                "CURRENCY_MISMATCH" => ("Currencies differ", "币种不符"),
                "ONE_TO_MANY" => ("One order, several payments", "一单多付"),
                "DUPLICATE" => ("Listed twice", "重复记录"),
                "STATUS_LAG" => ("Status behind the provider", "状态滞后"),
                "REFUND_MISMATCH" => ("Refund differs", "退款不符"),
                "TXN_MISMATCH" => ("Transaction id differs", "流水号不符"),
                "PROVIDER_MISMATCH" => ("Other provider", "渠道不符"),
                "PAID_AFTER_CLOSE" => ("Paid after close", "关单后支付"),
                "PAYOUT_MISSING" => ("Payout not at the bank", "结算款未到账"),
                "BANK_ONLY" => ("Only on the bank statement", "仅银行有"),
                "PAYOUT_AMOUNT_MISMATCH" => ("Payout amount differs", "结算金额不符"),
                "FEE_MISMATCH" => ("Fee differs", "手续费不符"),
                "DISPUTE" => ("Disputed (chargeback)", "争议拒付"),
                "PAYOUT_LATE" => ("Payout later than usual", "结算款晚于惯常到账"),
                _ => return None,
            },
            Codes::Severity => match code.to_ascii_uppercase().as_str() {
                "CRITICAL" => ("critical", "紧急"),
                "HIGH" => ("high", "高"),
                "MEDIUM" => ("medium", "中"),
                "LOW" => ("low", "低"),
                "WARNING" => ("warning", "警告"),
                _ => return None,
            },
            Codes::TicketStatus => match code {
                "OPEN" => ("open", "待处理"),
                "IN_PROGRESS" => ("in progress", "处理中"),
                "AWAITING_APPROVAL" => ("awaiting approval", "待审批"),
                "CLOSED" => ("closed", "已关闭"),
                "ACTIVE" => ("not closed", "未关闭"),
                _ => return None,
            },
            Codes::PaymentStatus => match code {
                "CREATED" => ("created", "已创建"),
                "PENDING" => ("waiting for the payer", "待支付"),
                "SUCCEEDED" => ("paid", "支付成功"),
                "FAILED" => ("failed", "支付失败"),
                "REFUNDING" => ("refund under way", "退款中"),
                "REFUNDED" => ("refunded", "已退款"),
                "CLOSED" => ("closed", "已关闭"),
                _ => return None,
            },
            Codes::RefundStatus => match code {
                "REQUESTED" => ("requested", "已申请"),
                "PENDING" => ("with the provider", "渠道处理中"),
                "SUCCEEDED" => ("refunded", "退款成功"),
                "FAILED" => ("failed", "退款失败"),
                _ => return None,
            },
            Codes::CallbackStatus => match code {
                "RECEIVED" => ("received", "已接收"),
                "PROCESSING" => ("processing", "处理中"),
                "SUCCESS" => ("processed", "处理成功"),
                "FAILED" => ("failed, to retry", "处理失败（待重试）"),
                "DEAD" => ("given up", "已放弃"),
                _ => return None,
            },
            Codes::Verify => match code {
                "VERIFIED" => ("signature verified", "验签通过"),
                _ => return None,
            },
            Codes::ProposalStatus => match code {
                "PENDING" => ("waiting for approval", "待审批"),
                "APPROVED" => ("approved", "已批准"),
                "REJECTED" => ("rejected", "已驳回"),
                "EXECUTED" => ("executed", "已执行"),
                "FAILED" => ("failed", "执行失败"),
                "SUPERSEDED" => ("superseded", "已被取代"),
                "EXPIRED" => ("expired", "已过期"),
                _ => return None,
            },
            Codes::FixKind => {
                let kind = code.parse::<crate::tickets::FixKind>().ok()?;
                (
                    crate::i18n::fix_name(kind, Lang::En),
                    crate::i18n::fix_name(kind, Lang::Zh),
                )
            }
            Codes::RunStatus => match code {
                "RUNNING" => ("running", "运行中"),
                "COMPLETED" => ("completed", "已完成"),
                "FAILED" => ("failed", "失败"),
                _ => return None,
            },
            Codes::AlertKind => match code {
                "audit_tampered" => ("Audit log tampered with", "审计日志被篡改"),
                "callback_conflict" => ("Callbacks disagree", "回调结果冲突"),
                "callback_dead" => ("Callback given up", "回调处理已放弃"),
                "conflict" => ("Outcome conflicts", "支付结果冲突"),
                "events_undelivered" => ("Provider events not delivered", "渠道通知未送达"),
                "local_only" => ("Paid only in Reckon", "仅本地有的支付"),
                "out_of_order" => ("Outcome out of order", "结果顺序异常"),
                "outbox_dead" => ("Message not delivered", "消息投递失败"),
                "paid_after_close" => ("Paid after close", "关单后支付"),
                "queries_exhausted" => ("Provider queries used up", "渠道查询次数用尽"),
                "refund_mismatch" => ("Refund differs", "退款不符"),
                "refund_queries_exhausted" => ("Refund queries used up", "退款查询次数用尽"),
                "sink_failing" => ("Sink failing", "推送端点失败"),
                "sla_overdue" => ("Ticket overdue", "工单超时"),
                "statement_missing" => ("Statement missing", "对账单缺失"),
                "statement_pull_failed" => ("Statement download failed", "对账单下载失败"),
                "webhooks_refused_spike" => ("Many webhooks refused", "被拒回调激增"),
                _ => return None,
            },
        })
    }

    /// The code in the viewer's language: its words in Chinese, the code
    /// itself in English; an unknown code as it is.
    pub fn shown(self, code: &str, lang: Lang) -> String {
        match (lang, self.words(code)) {
            (Lang::Zh, Some((_, zh))) => zh.to_owned(),
            _ => code.to_owned(),
        }
    }

    /// What the tooltip says: the words in English, the code in Chinese.
    pub fn hint(self, code: &str, lang: Lang) -> String {
        match (lang, self.words(code)) {
            (Lang::En, Some((en, _))) => en.to_owned(),
            _ => code.to_owned(),
        }
    }
}

/// A code as a page shows it (see the module's note).
#[component]
pub fn Code(set: Codes, #[prop(into)] code: String, lang: Lang) -> impl IntoView {
    view! {
        <span class="code" title=set.hint(&code, lang) data-code=code.clone()>{set.shown(&code, lang)}</span>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_words_in_both_languages() {
        for set in Codes::ALL {
            for code in set.all() {
                let (en, zh) = set
                    .words(code)
                    .unwrap_or_else(|| panic!("{set:?} {code} has no words"));
                assert!(!en.trim().is_empty(), "{set:?} {code}: no English");
                assert!(!zh.trim().is_empty(), "{set:?} {code}: no Chinese");
                assert_ne!(zh, code, "{set:?} {code}: Chinese is the code");
                assert!(
                    !zh.is_ascii(),
                    "{set:?} {code}: Chinese words are not Chinese: {zh}"
                );
            }
        }
    }

    #[test]
    fn a_chinese_page_shows_words_an_english_page_the_code() {
        assert_eq!(Codes::Class.shown("LOCAL_ONLY", Lang::Zh), "仅本地有");
        assert_eq!(Codes::Class.hint("LOCAL_ONLY", Lang::Zh), "LOCAL_ONLY");
        assert_eq!(Codes::Class.shown("LOCAL_ONLY", Lang::En), "LOCAL_ONLY");
        assert_eq!(Codes::Class.hint("LOCAL_ONLY", Lang::En), "Only in Reckon");
        assert_eq!(Codes::Severity.shown("critical", Lang::Zh), "紧急");
        // The same code reads differently in different sets.
        assert_ne!(
            Codes::PaymentStatus.shown("PENDING", Lang::Zh),
            Codes::ProposalStatus.shown("PENDING", Lang::Zh)
        );
        // A code the catalogue does not know is shown as it is.
        assert_eq!(Codes::AlertKind.shown("new_kind", Lang::Zh), "new_kind");
    }
}

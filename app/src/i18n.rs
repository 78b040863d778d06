//! The one catalogue of visible strings, English and Chinese: every string
//! more than one page shows is a [`Msg`]; a page's own words are [`tr`] at
//! their call site. A key without both translations does not compile.

use crate::error::AppError;
use crate::types::{Lang, Role};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    AppName,
    Tagline,
    SignIn,
    SignOut,
    Username,
    Password,
    NewPassword,
    Role,
    Language,
    SwitchLanguage,
    SignedInAs,
    NavUsers,
    FirstAdminTitle,
    FirstAdminBody,
    UsersTitle,
    UsersIntro,
    CreateUser,
    Create,
    ChangeRole,
    ResetPassword,
    Disable,
    Enable,
    Status,
    Active,
    Disabled,
    Actions,
    Saved,
    Loading,
    ForbiddenTitle,
    ForbiddenBody,
    NotFoundTitle,
    NotFoundBody,
    BackHome,
    You,
    // The console's words shared by more than one page: pages' names,
    // list controls, and the fields of payments, callbacks and tickets.
    Dashboard,
    Discrepancies,
    Approvals,
    Callbacks,
    Payments,
    Alerts,
    Filter,
    Search,
    Clear,
    Older,
    Any,
    Provider,
    BusinessDay,
    Payment,
    Order,
    TxnId,
    TraceId,
    Amount,
    Held,
    Owner,
    Callback,
    Signature,
    Processing,
    Fix,
    DecidedBy,
    Before,
    After,
    // The bank side (the dashboard's section and the bank page).
    Bank,
    SettledToBank,
    PayoutState,
    // Fees and net; closing the day.
    Gross,
    RefundsTotal,
    Fees,
    Net,
    DayClosed,
    // Ticket ageing, SLA, the ticket queue, copying ids.
    Age,
    AgeDays,
    Overdue,
    Copy,
    Copied,
    NextTicket,
    PreviousTicket,
    QueueKeys,
    // The outbox.
    Outbox,
    Sink,
    Resend,
    Attempts,
    // Outbox sinks.
    Sinks,
    SinksFailing,
    SinkPause,
    SinkResume,
    SinkReason,
    SinkRetryNow,
    SinkRetryNowHint,
    SinkMadeDue,
    SinkNothingWaiting,
    // Refused webhooks.
    RefusedWebhooks,
    Diagnosis,
    SourceAddress,
    Reason,
    // Asking before a consequential submit (bulk work, decisions, a close).
    Confirm,
    Cancel,
    // Alerts and the supervisor's queue (the alerts page, the dashboard,
    // the top bar).
    AlertOpen,
    AlertAcknowledged,
    AlertResolved,
    WaitingForYou,
    Severity,
    Kind,
    // Working tickets from the keyboard.
    SkipToContent,
    AssignToMe,
    KeyboardShortcuts,
    // API tokens (the navigation and the tokens page).
    NavTokens,
    NavSettings,
    // Console sessions (the top bar, the users page, the sessions page).
    Sessions,
}

impl Msg {
    pub fn text(self, lang: Lang) -> &'static str {
        let (en, zh) = self.both();
        match lang {
            Lang::En => en,
            Lang::Zh => zh,
        }
    }

    fn both(self) -> (&'static str, &'static str) {
        use Msg::*;
        match self {
            AppName => ("Reckon", "Reckon 对账台"),
            Tagline => ("Payment callbacks and reconciliation", "支付回调与对账"),
            SignIn => ("Sign in", "登录"),
            SignOut => ("Sign out", "退出登录"),
            Username => ("Username", "用户名"),
            Password => ("Password", "密码"),
            NewPassword => ("New password", "新密码"),
            Role => ("Role", "角色"),
            Language => ("Language", "语言"),
            SwitchLanguage => ("中文", "English"),
            SignedInAs => ("Signed in as", "当前用户"),
            NavUsers => ("Users", "用户管理"),
            FirstAdminTitle => ("No users yet", "尚无任何用户"),
            FirstAdminBody => (
                "Create the first admin on the server with this command, then sign in:",
                "请在服务器上运行以下命令创建第一个管理员，然后登录：",
            ),
            UsersTitle => ("Users", "用户管理"),
            UsersIntro => (
                "Every change here is written to the audit log with who, when, before and after.",
                "此处的每项变更都会写入审计日志，记录操作人、时间以及变更前后的值。",
            ),
            CreateUser => ("Create a user", "新建用户"),
            Create => ("Create", "创建"),
            ChangeRole => ("Change role", "修改角色"),
            ResetPassword => ("Reset password", "重置密码"),
            Disable => ("Disable", "停用"),
            Enable => ("Enable", "启用"),
            Status => ("Status", "状态"),
            Active => ("active", "正常"),
            Disabled => ("disabled", "已停用"),
            Actions => ("Actions", "操作"),
            Saved => ("Saved.", "已保存。"),
            Loading => ("Loading…", "加载中…"),
            ForbiddenTitle => ("Not allowed", "无权访问"),
            ForbiddenBody => (
                "Your role may not open this page.",
                "您的角色无权打开此页面。",
            ),
            NotFoundTitle => ("Page not found", "页面不存在"),
            NotFoundBody => (
                "There is no page at this address.",
                "此地址没有对应的页面。",
            ),
            BackHome => ("Back to the start page", "返回首页"),
            You => ("you", "本人"),
            Dashboard => ("Dashboard", "总览"),
            Discrepancies => ("Discrepancies", "差异工单"),
            Approvals => ("Approvals", "审批"),
            Callbacks => ("Callbacks", "回调"),
            Payments => ("Payments", "支付单"),
            Alerts => ("Alerts", "告警"),
            Filter => ("Filter", "筛选"),
            Search => ("Search", "搜索"),
            Clear => ("Clear", "清除"),
            Older => ("Older →", "更早 →"),
            Any => ("any", "全部"),
            Provider => ("Provider", "渠道"),
            BusinessDay => ("Business day", "业务日"),
            Payment => ("Payment", "支付单"),
            Order => ("Order", "订单号"),
            TxnId => ("Txn id", "渠道流水号"),
            TraceId => ("Trace id", "追踪号"),
            Amount => ("Amount", "金额"),
            Held => ("Held", "冻结"),
            Owner => ("Owner", "负责人"),
            Callback => ("Callback", "回调"),
            Signature => ("Signature", "验签"),
            Processing => ("Processing", "处理状态"),
            Fix => ("Fix", "修复方式"),
            DecidedBy => ("Decided by", "审批人"),
            Before => ("Before", "变更前"),
            After => ("After", "变更后"),
            // The bank side.
            Bank => ("Bank", "银行"),
            SettledToBank => ("Settled to bank", "已到账银行"),
            PayoutState => ("Match state", "匹配状态"),
            // Fees and net; closing the day.
            Gross => ("Gross", "交易总额"),
            RefundsTotal => ("Refunds", "退款总额"),
            Fees => ("Fees", "手续费"),
            Net => ("Net", "净额"),
            DayClosed => ("closed", "已日结"),
            // Ticket ageing, SLA, the ticket queue, copying ids.
            Age => ("Age", "账龄"),
            AgeDays => ("days", "天"),
            Overdue => ("overdue", "已超时"),
            Copy => ("Copy", "复制"),
            Copied => ("Copied", "已复制"),
            NextTicket => ("Next ticket", "下一个工单"),
            PreviousTicket => ("Previous ticket", "上一个工单"),
            QueueKeys => (
                "Keys: j next, k previous, u back to the list",
                "快捷键：j 下一个，k 上一个，u 返回列表",
            ),
            // The outbox.
            Outbox => ("Outbox", "消息外发"),
            Sink => ("Sink", "推送端点"),
            Resend => ("Resend", "重新发送"),
            Attempts => ("Attempts", "投递次数"),
            // Outbox sinks.
            Sinks => ("Sinks", "推送端点"),
            SinksFailing => (
                "Outbox sinks failing: deliveries keep failing",
                "推送端点持续失败：消息投递一直不成功",
            ),
            SinkPause => ("Pause", "暂停"),
            SinkResume => ("Resume", "恢复"),
            SinkReason => ("Reason", "原因"),
            SinkRetryNow => ("Retry now", "立即重试"),
            SinkRetryNowHint => (
                "Every delivery waiting for a later retry goes out now",
                "所有等待稍后重试的投递立即发送",
            ),
            SinkMadeDue => ("· deliveries due now:", "· 已立即重试的投递："),
            SinkNothingWaiting => (
                "Nothing was waiting for a retry; nothing changed.",
                "没有等待重试的投递，未作任何更改。",
            ),
            // Refused webhooks.
            RefusedWebhooks => ("Refused webhooks", "被拒回调"),
            Diagnosis => ("Diagnosis", "诊断"),
            SourceAddress => ("Source address", "来源地址"),
            Reason => ("Reason", "原因"),
            Confirm => ("Confirm", "确认"),
            Cancel => ("Cancel", "取消"),
            AlertOpen => ("open", "未处理"),
            AlertAcknowledged => ("acknowledged", "已确认"),
            AlertResolved => ("resolved", "已消除"),
            WaitingForYou => ("Waiting for your decision", "待您审批"),
            Severity => ("Severity", "严重程度"),
            Kind => ("Kind", "类型"),
            SkipToContent => ("Skip to content", "跳到正文"),
            AssignToMe => ("Assign to me", "分配给我"),
            KeyboardShortcuts => ("Keyboard shortcuts", "键盘快捷键"),
            NavTokens => ("API tokens", "API 令牌"),
            NavSettings => ("Settings", "配置"),
            Sessions => ("Sessions", "登录会话"),
        }
    }
}

/// An alert's state (open | acknowledged | resolved) in the viewer's
/// language; another word as it is.
pub fn alert_state_text(state: &str, lang: Lang) -> String {
    match state {
        "open" => Msg::AlertOpen.text(lang).to_owned(),
        "acknowledged" => Msg::AlertAcknowledged.text(lang).to_owned(),
        "resolved" => Msg::AlertResolved.text(lang).to_owned(),
        other => other.to_owned(),
    }
}

pub fn role_name(role: Role, lang: Lang) -> &'static str {
    match (role, lang) {
        (Role::Operator, Lang::En) => "Operator",
        (Role::Supervisor, Lang::En) => "Supervisor",
        (Role::Admin, Lang::En) => "Admin",
        (Role::Operator, Lang::Zh) => "操作员",
        (Role::Supervisor, Lang::Zh) => "主管",
        (Role::Admin, Lang::Zh) => "管理员",
    }
}

pub fn error_text(err: &AppError, lang: Lang) -> String {
    match (err, lang) {
        (AppError::Unauthenticated, Lang::En) => "Please sign in.".into(),
        (AppError::Unauthenticated, Lang::Zh) => "请先登录。".into(),
        (AppError::Forbidden, Lang::En) => "Your role may not do this.".into(),
        (AppError::Forbidden, Lang::Zh) => "您的角色无权执行此操作。".into(),
        (AppError::BadCredentials, Lang::En) => "Wrong username or password.".into(),
        (AppError::BadCredentials, Lang::Zh) => "用户名或密码错误。".into(),
        (AppError::Throttled { minutes }, Lang::En) => {
            format!("Too many failed sign-ins. Try again in {minutes} minutes.")
        }
        (AppError::Throttled { minutes }, Lang::Zh) => {
            format!("登录失败次数过多，请 {minutes} 分钟后再试。")
        }
        (AppError::Busy { seconds }, Lang::En) => {
            format!("Too many sign-ins at once. Try again in {seconds} seconds.")
        }
        (AppError::Busy { seconds }, Lang::Zh) => {
            format!("同时登录的人过多，请 {seconds} 秒后再试。")
        }
        (AppError::InvalidUsername, Lang::En) => {
            "A username is 2–32 characters: lowercase letters, digits, '.', '_' or '-', starting with a letter or digit.".into()
        }
        (AppError::InvalidUsername, Lang::Zh) => {
            "用户名为 2–32 个字符：小写字母、数字、'.'、'_' 或 '-'，以字母或数字开头。".into()
        }
        (AppError::WeakPassword { min }, Lang::En) => {
            format!("A password needs at least {min} characters.")
        }
        (AppError::WeakPassword { min }, Lang::Zh) => format!("密码至少需要 {min} 个字符。"),
        (AppError::UsernameTaken, Lang::En) => "That username is already taken.".into(),
        (AppError::UsernameTaken, Lang::Zh) => "该用户名已被占用。".into(),
        (AppError::LastAdmin, Lang::En) => {
            "The last active admin cannot lose the admin role or be disabled.".into()
        }
        (AppError::LastAdmin, Lang::Zh) => "最后一位有效管理员不能被降级或停用。".into(),
        (AppError::NotOnYourself, Lang::En) => {
            "You cannot disable yourself or change your own role.".into()
        }
        (AppError::NotOnYourself, Lang::Zh) => "不能停用自己或修改自己的角色。".into(),
        (AppError::NotFound, Lang::En) => "Not found.".into(),
        (AppError::NotFound, Lang::Zh) => "未找到。".into(),
        (AppError::Required { field }, Lang::En) => format!("{field} is required."),
        (AppError::Required { field }, Lang::Zh) => format!("{}为必填项。", field_zh(field)),
        (AppError::OwnProposal, Lang::En) => {
            "You proposed this fix: another supervisor must decide it.".into()
        }
        (AppError::OwnProposal, Lang::Zh) => "这是您提出的修复，须由另一位主管审批。".into(),
        (AppError::ProposalExpired, Lang::En) => {
            "The proposal has expired; propose it again if it is still right.".into()
        }
        (AppError::ProposalExpired, Lang::Zh) => "该提议已过期；如仍需修复请重新提议。".into(),
        (AppError::ProposalDecided, Lang::En) => "The proposal was already decided.".into(),
        (AppError::ProposalDecided, Lang::Zh) => "该提议已被处理。".into(),
        (AppError::AlreadyApproved, Lang::En) => {
            "You approved this proposal already: another approver is needed.".into()
        }
        (AppError::AlreadyApproved, Lang::Zh) => "您已批准过该提议：还需要另一位审批人。".into(),
        (AppError::ProposalStale { reason }, Lang::En) => format!(
            "The payment changed since the proposal ({reason}); nothing was executed. Propose again."
        ),
        (AppError::ProposalStale { reason }, Lang::Zh) => {
            format!("提议之后支付单已变化（{reason}），未执行任何操作，请重新提议。")
        }
        (AppError::TicketClosed, Lang::En) => "The ticket is closed.".into(),
        (AppError::TicketClosed, Lang::Zh) => "该工单已关闭。".into(),
        (AppError::AlreadyProposed, Lang::En) => {
            "This ticket already has a proposal waiting for approval.".into()
        }
        (AppError::AlreadyProposed, Lang::Zh) => "该工单已有待审批的修复提议。".into(),
        (AppError::FixNotApplicable { detail }, Lang::En) => {
            format!("This fix does not apply here: {detail}")
        }
        (AppError::FixNotApplicable { detail }, Lang::Zh) => format!("该修复不适用：{detail}"),
        (AppError::Invalid { detail }, Lang::En) => format!("The request is not valid: {detail}"),
        (AppError::Invalid { detail }, Lang::Zh) => format!("请求无效：{detail}"),
        (AppError::FileTooLarge { max_kib }, Lang::En) => {
            format!("The file is larger than {max_kib} KiB.")
        }
        (AppError::FileTooLarge { max_kib }, Lang::Zh) => format!("文件超过 {max_kib} KiB。"),
        (AppError::NotReplayable, Lang::En) => {
            "Only a callback whose signature verified may be replayed.".into()
        }
        (AppError::NotReplayable, Lang::Zh) => "只有验签通过的回调才能重放。".into(),
        (AppError::Refused { detail }, Lang::En) => format!("Refused: {detail}"),
        (AppError::Refused { detail }, Lang::Zh) => format!("已拒绝：{detail}"),
        (AppError::UndoExpired { minutes }, Lang::En) => format!(
            "Undo is offered for {minutes} minutes after a bulk close ends; that time has passed and the tickets stay closed."
        ),
        (AppError::UndoExpired { minutes }, Lang::Zh) => {
            format!("批量关闭结束后 {minutes} 分钟内可撤销；该时限已过，工单保持关闭。")
        }
        (AppError::ProviderUnavailable { detail }, Lang::En) => {
            format!("The provider could not be asked: {detail}")
        }
        (AppError::ProviderUnavailable { detail }, Lang::Zh) => format!("无法查询渠道：{detail}"),
        (AppError::GrantPending, Lang::En) => "Your role was granted in the console and waits for a second admin to confirm it: until then you cannot approve or reject, nor grant or confirm a role that decides.".into(),
        (AppError::GrantPending, Lang::Zh) => {
            "您的角色由管理员在控制台授予，尚待另一位管理员确认；确认前您不能审批或驳回，也不能授予或确认有决定权的角色。".into()
        }
        (AppError::NotIndependent { proposer, link }, Lang::En) => {
            let what = match link.as_str() {
                "created" => format!("created {proposer}'s account"),
                "granted" => format!("granted {proposer}'s role"),
                _ => format!("confirmed {proposer}'s role"),
            };
            format!("You {what}, and {proposer} proposed this: someone who did neither decides it.")
        }
        (AppError::NotIndependent { proposer, link }, Lang::Zh) => {
            let what = match link.as_str() {
                "created" => format!("创建了 {proposer} 的账户"),
                "granted" => format!("授予了 {proposer} 的角色"),
                _ => format!("确认了 {proposer} 的角色"),
            };
            format!("您{what}，而此项由 {proposer} 提出：须由与其无此关系的人决定。")
        }
        (AppError::Held { action_id, required }, Lang::En) => format!(
            "Held for approval: the approval policy asks {required} approver(s) besides you before this runs. It waits on the Approvals page as {action_id}."
        ),
        (AppError::Held { action_id, required }, Lang::Zh) => {
            format!("已提交审批：按审批规则，须由您以外的 {required} 人批准后才会执行。请在审批页查看 {action_id}。")
        }
        (AppError::OwnGrant, Lang::En) => {
            "A role grant is confirmed by a second admin: neither the admin who granted it nor its grantee.".into()
        }
        (AppError::OwnGrant, Lang::Zh) => "角色授权须由另一位管理员确认：授权人和被授权人都不能确认。".into(),
        (AppError::WrongCode, Lang::En) => {
            "Wrong code, or a code already used: wait for the next one.".into()
        }
        (AppError::WrongCode, Lang::Zh) => "验证码错误或已使用过，请等待下一个验证码。".into(),
        (AppError::OwnSecondFactor, Lang::En) => {
            "You cannot reset your own second factor: another admin, or `reckon user mfa-reset` on the host, can.".into()
        }
        (AppError::OwnSecondFactor, Lang::Zh) => {
            "不能重置自己的第二因素：请另一位管理员操作，或在主机上运行 `reckon user mfa-reset`。".into()
        }
        (AppError::NoGrantPending, Lang::En) => {
            "No grant of this role is waiting for confirmation (it was confirmed, revoked or changed meanwhile).".into()
        }
        (AppError::PasswordsOff, Lang::En) => {
            "Password sign-in is turned off: sign in through the identity provider.".into()
        }
        (AppError::PasswordsOff, Lang::Zh) => "密码登录已关闭，请通过身份提供方登录。".into(),
        (AppError::NoGrantPending, Lang::Zh) => "没有待确认的该角色授权（可能已被确认、撤销或更改）。".into(),
        (AppError::Internal { trace_id }, Lang::En) => {
            format!("Something went wrong on the server (trace {trace_id}).")
        }
        (AppError::Internal { trace_id }, Lang::Zh) => {
            format!("服务器内部错误（追踪号 {trace_id}）。")
        }
        (AppError::Transport(detail), Lang::En) => format!("The request failed: {detail}"),
        (AppError::Transport(detail), Lang::Zh) => format!("请求失败：{detail}"),
    }
}

/// The name of a required field, as the server names it, in Chinese (a
/// field not listed shows as named).
fn field_zh(field: &str) -> &str {
    match field {
        "comment" => "备注",
        "owner" => "负责人",
        "conclusion" => "结论",
        "evidence" => "证据",
        "reason" => "原因",
        "file name" => "文件名",
        other => other,
    }
}

/// A header naming the zone its times are in: `Received (Asia/Shanghai)`,
/// `接收时间（Asia/Shanghai）`.
pub fn in_zone(lang: Lang, en: &str, zh: &str, zone: &crate::format::Zone) -> String {
    match lang {
        Lang::En => format!("{en} ({})", zone.name()),
        Lang::Zh => format!("{zh}（{}）", zone.name()),
    }
}

/// A string of a page that has its own words: both languages at the call
/// site (the signature makes a missing translation a compile error).
pub fn tr(lang: Lang, en: &'static str, zh: &'static str) -> &'static str {
    match lang {
        Lang::En => en,
        Lang::Zh => zh,
    }
}

/// Where a proposal's approvals stand: "1 of 2 approvals", with who gave
/// them so far.
pub fn approvals_so_far(lang: Lang, approved_by: &[String], required: i64) -> String {
    let n = approved_by.len();
    let who = approved_by.join(", ");
    match (lang, n) {
        (Lang::En, 0) => format!("0 of {required} approvals"),
        (Lang::En, _) => format!("{n} of {required} approvals (by {who})"),
        (Lang::Zh, 0) => format!("已批准 0 / 需要 {required} 人"),
        (Lang::Zh, _) => format!("已批准 {n} / 需要 {required} 人（{who}）"),
    }
}

/// A ticket status in words.
pub fn ticket_status(status: &str, lang: Lang) -> &'static str {
    match status {
        "OPEN" => tr(lang, "open", "待处理"),
        "IN_PROGRESS" => tr(lang, "in progress", "处理中"),
        "AWAITING_APPROVAL" => tr(lang, "awaiting approval", "待审批"),
        "CLOSED" => tr(lang, "closed", "已关闭"),
        "ACTIVE" => tr(lang, "not closed", "未关闭"),
        _ => tr(lang, "unknown", "未知"),
    }
}

/// A fix in words.
pub fn fix_name(kind: crate::tickets::FixKind, lang: Lang) -> &'static str {
    use crate::tickets::FixKind::*;
    match kind {
        Backfill => tr(lang, "Backfill as paid", "补单为已支付"),
        ClosePayment => tr(lang, "Close the payment", "关闭该支付单"),
        AcceptAmount => tr(lang, "Accept the provider's amount", "以渠道金额为准"),
        Merge => tr(
            lang,
            "Merge: keep one, close the others",
            "合并：保留一笔，关闭其余",
        ),
        ReleaseHold => tr(lang, "Release the hold", "解除冻结"),
        AcceptPayment => tr(
            lang,
            "Accept the late payment as paid",
            "确认迟到的支付成功",
        ),
        RefundPayment => tr(
            lang,
            "Refund the late payment in full",
            "全额退还迟到的支付",
        ),
        GroupMatch => tr(
            lang,
            "Match as a group: settle the payouts by the credits",
            "合并匹配：以银行入账核销这组出款",
        ),
    }
}

//! Reading bills: generated Stripe itemized reports and Alipay 业务明细
//! files of 100,000 rows (quoted fields with commas, Alipay in GBK) and a
//! sandbox statement of 1,000,000 rows, each read through the statement
//! reader as a run reads it (a 64 KiB buffer, chunks of 4,096 rows), five
//! times; prints the median and the fastest pass of each.
//!
//!     cargo bench --bench bills
//!     RECKON_BENCH_ROWS=20000 RECKON_BENCH_ONLY=sandbox cargo bench --bench bills

use reckon::providers::{alipay, sandbox, stripe};
use reckon::statement::{Chunk, Format, Pause, read};
use std::time::Instant;

const ROUNDS: usize = 5;

fn stripe(n: usize) -> Vec<u8> {
    let mut out = String::from(
        "automatic_payout_id,balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,description,charge_id,payment_intent_id,payment_metadata[payment_no],refund_metadata[refund_no]\n",
    );
    for i in 0..n {
        let minor = 100 + (i * 37) % 100_000;
        let (gross, category, source, refund_no) = if i % 10 == 9 {
            (
                format!("-{}.{:02}", minor / 100, minor % 100),
                "refund",
                format!("re_{i}"),
                format!("RFD{i}"),
            )
        } else {
            (
                format!("{}.{:02}", minor / 100, minor % 100),
                "charge",
                format!("ch_{i}"),
                String::new(),
            )
        };
        out.push_str(&format!(
            "po_1,txn_{i},2026-11-30 {:02}:{:02}:{:02},2026-12-02 00:00:00,eur,{gross},0.30,{gross},{category},{source},\"Order {i}, blue \"\"L\"\"\",ch_{i},pi_{i},PAY{i},{refund_no}\n",
            (i / 3600) % 24,
            (i / 60) % 60,
            i % 60
        ));
        if i % 50 == 0 {
            out.push_str("po_1,txn_fee,2026-11-30 12:00:00,2026-12-02 00:00:00,eur,-1.47,0.00,-1.47,fee,,Stripe fee,,,,\n");
        }
    }
    out.into_bytes()
}

fn alipay(n: usize) -> Vec<u8> {
    let mut out = String::from(
        "#支付宝业务明细查询\n#账号：[20880000000000010156]\n#起始日期：[2026年11月30日 00:00:00]   终止日期：[2026年12月01日 00:00:00]\n#-----------------------------------------业务明细列表----------------------------------------\n\
支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注\n",
    );
    let (mut payments, mut refunds) = (0, 0);
    for i in 0..n {
        let minor = 100 + (i * 37) % 100_000;
        let time = format!(
            "2026-11-30 {:02}:{:02}:{:02}",
            (i / 3600) % 24,
            (i / 60) % 60,
            i % 60
        );
        if i % 10 == 9 {
            refunds += 1;
            out.push_str(&format!(
                "20261130220{i}\t,PAY{i}\t,退款,\"测试商品, 蓝色\",{time},{time},,,,,张*(a***@x.com),-{}.{:02},-{}.{:02},0.00,0.00,0.00,0.00,0.00,,0.00,0.00,RFD{i}\t,0.12,0.00,\n",
                minor / 100, minor % 100, minor / 100, minor % 100
            ));
        } else {
            payments += 1;
            out.push_str(&format!(
                "20261130220{i}\t,PAY{i}\t,交易,测试商品,{time},{time},,,,,张*(a***@x.com),{}.{:02},{}.{:02},0.00,0.00,0.00,0.00,0.00,,0.00,0.00,,-0.53,0.00,\n",
                minor / 100, minor % 100, minor / 100, minor % 100
            ));
        }
    }
    out.push_str(&format!(
        "#-----------------------------------------业务明细列表结束------------------------------------\n\
#交易合计：{payments}笔，商家实收共0.00元，商家优惠共0.00元\n#退款合计：{refunds}笔，商家实收退款共0.00元\n#导出时间：[2026年12月01日 09:00:00]\n"
    ));
    encoding_rs::GBK.encode(&out).0.into_owned()
}

fn sandbox(n: usize) -> Vec<u8> {
    let mut out = String::from(
        "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n",
    );
    let mut total = 0i64;
    for i in 0..n {
        let minor = 100 + (i as i64 * 37) % 100_000;
        total += minor;
        out.push_str(&format!(
            "payment,SBX{i},PAY{i},,,SUCCEEDED,{}.{:02},USD,2026-11-30T{:02}:{:02}:{:02}Z\n",
            minor / 100,
            minor % 100,
            (i / 3600) % 24,
            (i / 60) % 60,
            i % 60
        ));
    }
    out.push_str(&format!("#summary,rows={n},total_minor={total}\n"));
    out.into_bytes()
}

/// Reads `bytes` to its end; the rows read.
fn read_all(format: Format, bytes: &[u8]) -> usize {
    let input = std::io::BufReader::with_capacity(1 << 16, bytes);
    let mut statement = read(format, Box::new(input));
    let mut chunk = Chunk::with_capacity(4096);
    let mut rows = 0;
    loop {
        let pause = statement.read_rows(&mut chunk, 4096).unwrap();
        rows += chunk.len();
        chunk.clear();
        match pause {
            Pause::Full => {}
            Pause::Skipped(e) => panic!("{e:?}"),
            Pause::End(checks) => {
                assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
                return rows;
            }
        }
    }
}

fn time(what: &str, format: Format, bytes: &[u8]) {
    let only = std::env::var("RECKON_BENCH_ONLY").unwrap_or_default();
    if !what.starts_with(only.as_str()) {
        return;
    }
    let mut passes = Vec::new();
    let mut rows = 0;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        rows = read_all(format.clone(), bytes);
        passes.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    passes.sort_by(f64::total_cmp);
    println!(
        "{what}: {rows} rows, {:.1} MiB: median {:.1} ms, fastest {:.1} ms (of {ROUNDS})",
        bytes.len() as f64 / (1 << 20) as f64,
        passes[ROUNDS / 2],
        passes[0]
    );
}

fn main() {
    let n: usize = std::env::var("RECKON_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    time("stripe itemized", stripe::statement::FORMAT, &stripe(n));
    time("alipay detail (GBK)", alipay::statement::FORMAT, &alipay(n));
    time("sandbox", sandbox::statement::FORMAT, &sandbox(n * 10));
}

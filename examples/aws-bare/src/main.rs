//! The size baseline for cronslot's Lambda: the Lambda runtime and the
//! DynamoDB SDK, reading one item per event.

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let table = std::env::var("TABLE").unwrap_or_else(|_| "bare".to_string());
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let (client, table) = (client.clone(), table.clone());
        async move {
            let item = client
                .get_item()
                .table_name(table)
                .key("pk", AttributeValue::S(event.context.request_id))
                .consistent_read(true)
                .send()
                .await?;
            Ok::<Value, Error>(json!({"found": item.item().is_some()}))
        }
    }))
    .await
}

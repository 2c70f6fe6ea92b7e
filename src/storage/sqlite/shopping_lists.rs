//! `ShoppingLists` on SQLite: table `shopping_items`, one row per item of a list.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::{SqliteStore, database_error, id_column};
use crate::ids::MemberId;
use crate::ports::{
    ShoppingItem, ShoppingLists, StorageError, check_shopping_quantity, shopping_key,
};

fn item_from_row(row: &SqliteRow) -> Result<ShoppingItem, StorageError> {
    let quantity: i64 = row.get("quantity");
    Ok(ShoppingItem {
        name: row.get("name"),
        quantity: u32::try_from(quantity)
            .map_err(|_| StorageError::Corrupt(format!("shopping_items.quantity {quantity}")))?,
        added_by: id_column(row, "shopping_items", "added_by")?,
        added_at_ms: row.get("added_at_ms"),
    })
}

#[async_trait]
impl ShoppingLists for SqliteStore {
    async fn add(
        &self,
        list: &str,
        name: &str,
        quantity: u32,
        member_id: &MemberId,
        at_ms: i64,
    ) -> Result<ShoppingItem, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let item_key = shopping_key("shopping item", name)?;
        check_shopping_quantity(name, quantity)?;
        let (name, member_id) = (name.trim().to_owned(), member_id.clone());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    // One statement, so a concurrent add of the same item merges instead
                    // of failing on the unique key. The sum stops at u32::MAX, the most
                    // the port can return.
                    let row = sqlx::query(
                        "INSERT INTO shopping_items \
                         (list_key, item_key, name, quantity, added_by, added_at_ms) \
                         VALUES (?, ?, ?, ?, ?, ?) \
                         ON CONFLICT (list_key, item_key) DO UPDATE SET \
                         quantity = min(quantity + excluded.quantity, 4294967295) \
                         RETURNING name, quantity, added_by, added_at_ms",
                    )
                    .bind(&list_key)
                    .bind(&item_key)
                    .bind(&name)
                    .bind(i64::from(quantity))
                    .bind(member_id.as_str())
                    .bind(at_ms)
                    .fetch_one(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    item_from_row(&row)
                })
            })
            .await
    }

    async fn remove(&self, list: &str, name: &str) -> Result<bool, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let item_key = shopping_key("shopping item", name)?;
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query("DELETE FROM shopping_items WHERE list_key = ? AND item_key = ?")
                        .bind(&list_key)
                        .bind(&item_key)
                        .execute(&mut *connection)
                        .await
                        .map(|done| done.rows_affected() > 0)
                        .map_err(database_error)
                })
            })
            .await
    }

    async fn list(&self, list: &str) -> Result<Vec<ShoppingItem>, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let rows = sqlx::query(
            "SELECT name, quantity, added_by, added_at_ms FROM shopping_items \
             WHERE list_key = ? ORDER BY id",
        )
        .bind(&list_key)
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(item_from_row).collect()
    }

    async fn clear(&self, list: &str) -> Result<u64, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query("DELETE FROM shopping_items WHERE list_key = ?")
                        .bind(&list_key)
                        .execute(&mut *connection)
                        .await
                        .map(|done| done.rows_affected())
                        .map_err(database_error)
                })
            })
            .await
    }
}

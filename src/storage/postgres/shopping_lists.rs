//! `ShoppingLists` on PostgreSQL: table `shopping_items`, one row per item of a list, in
//! the order first added.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::PgRow;

use super::{PostgresStore, database_error, id_column};
use crate::ids::MemberId;
use crate::ports::{
    ShoppingItem, ShoppingLists, StorageError, check_shopping_quantity, shopping_key,
};

fn item_from_row(row: &PgRow) -> Result<ShoppingItem, StorageError> {
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
impl ShoppingLists for PostgresStore {
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
        // One statement, so two workers adding the same item merge instead of one failing
        // on the unique key. The sum stops at u32::MAX, the most the port can return.
        let row = sqlx::query(
            "INSERT INTO shopping_items \
             (list_key, item_key, name, quantity, added_by, added_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (list_key, item_key) DO UPDATE SET \
             quantity = LEAST(shopping_items.quantity + excluded.quantity, 4294967295) \
             RETURNING name, quantity, added_by, added_at_ms",
        )
        .bind(&list_key)
        .bind(&item_key)
        .bind(name.trim())
        .bind(i64::from(quantity))
        .bind(member_id.as_str())
        .bind(at_ms)
        .fetch_one(&self.pool)
        .await
        .map_err(database_error)?;
        item_from_row(&row)
    }

    async fn remove(&self, list: &str, name: &str) -> Result<bool, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let item_key = shopping_key("shopping item", name)?;
        sqlx::query("DELETE FROM shopping_items WHERE list_key = $1 AND item_key = $2")
            .bind(&list_key)
            .bind(&item_key)
            .execute(&self.pool)
            .await
            .map(|done| done.rows_affected() > 0)
            .map_err(database_error)
    }

    async fn list(&self, list: &str) -> Result<Vec<ShoppingItem>, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let rows = sqlx::query(
            "SELECT name, quantity, added_by, added_at_ms FROM shopping_items \
             WHERE list_key = $1 ORDER BY id",
        )
        .bind(&list_key)
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(item_from_row).collect()
    }

    async fn clear(&self, list: &str) -> Result<u64, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        sqlx::query("DELETE FROM shopping_items WHERE list_key = $1")
            .bind(&list_key)
            .execute(&self.pool)
            .await
            .map(|done| done.rows_affected())
            .map_err(database_error)
    }
}

//! `ShoppingLists` on either SQL database: table `shopping_items`, one row per item of a
//! list, in the order first added.

use async_trait::async_trait;

use super::{SqlBackend, SqlRow, id_column, per_dialect, sql};
use crate::ids::MemberId;
use crate::ports::{
    ShoppingItem, ShoppingLists, StorageError, check_shopping_quantity, shopping_key,
};

fn item_from_row(row: &impl SqlRow) -> Result<ShoppingItem, StorageError> {
    let quantity = row.integer("quantity")?;
    Ok(ShoppingItem {
        name: row.text("name")?,
        quantity: u32::try_from(quantity)
            .map_err(|_| StorageError::Corrupt(format!("shopping_items.quantity {quantity}")))?,
        added_by: id_column(row, "shopping_items", "added_by")?,
        added_at_ms: row.integer("added_at_ms")?,
    })
}

#[async_trait]
impl<B: SqlBackend> ShoppingLists for B {
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
        // One statement, so a concurrent add of the same item (from any worker) merges
        // instead of failing on the unique key. The sum stops at u32::MAX, the most the
        // port can return.
        let add = per_dialect!(B::DIALECT, |dialect| format!(
            "INSERT INTO shopping_items \
             (list_key, item_key, name, quantity, added_by, added_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (list_key, item_key) DO UPDATE SET \
             quantity = {}(shopping_items.quantity + excluded.quantity, 4294967295) \
             RETURNING name, quantity, added_by, added_at_ms",
            dialect.least()
        ));
        let row = self
            .write_optional(
                sql(add)
                    .bind(list_key)
                    .bind(item_key)
                    .bind(name.trim())
                    .bind(i64::from(quantity))
                    .bind(member_id.as_str())
                    .bind(at_ms),
            )
            .await?
            .ok_or_else(|| StorageError::Database("the shopping item was not stored".into()))?;
        item_from_row(&row)
    }

    async fn remove(&self, list: &str, name: &str) -> Result<bool, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let item_key = shopping_key("shopping item", name)?;
        let removed = sql("DELETE FROM shopping_items WHERE list_key = $1 AND item_key = $2")
            .bind(list_key)
            .bind(item_key);
        Ok(self.write_count(removed).await? > 0)
    }

    async fn list(&self, list: &str) -> Result<Vec<ShoppingItem>, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let rows = self
            .read(
                sql(
                    "SELECT name, quantity, added_by, added_at_ms FROM shopping_items \
                     WHERE list_key = $1 ORDER BY id",
                )
                .bind(list_key),
            )
            .await?;
        rows.iter().map(item_from_row).collect()
    }

    async fn clear(&self, list: &str) -> Result<u64, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        self.write_count(sql("DELETE FROM shopping_items WHERE list_key = $1").bind(list_key))
            .await
    }
}

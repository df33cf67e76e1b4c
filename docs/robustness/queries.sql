-- m01: correlated; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
WHERE c.city_id = 1919
  AND c.state_id = 19
  AND dp.kind <> 1;

-- m02: skew, correlated; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id
  JOIN ms_date d ON d.date_id = s.date_id
  JOIN ms_product p ON p.prod_id = s.prod_id
WHERE rs.reason_id IN (0, 39, 38)
  AND d.month IN (1, 2, 3)
  AND d.quarter = 1;

-- m03: opaque, skew; 3 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_date d ON d.date_id = s.date_id
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
WHERE ms_pct(d.date_id) >= 95
  AND pr.pct = 0;

-- m04: expression; 4 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.brand_id / 10
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
WHERE cat.dept_id = 2
  AND dp.kind <> 0;

-- m05: many, correlated; 10 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_date d ON d.date_id = s.date_id
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
WHERE d.month IN (7, 8, 9)
  AND d.quarter = 3
  AND p.weight <= 40
  AND cat.dept_id <> 2
  AND dp.kind <> 2;

-- m06: stale, correlated; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_customer_st c ON c.cust_id = s.cust_id
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
WHERE c.segment = 10
  AND c.age BETWEEN 50 AND 59
  AND c.income_band = 5
  AND c.a = c.b
  AND rs.grp <> 3;

-- m07: correlated, expression; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_date d ON d.date_id = s.date_id
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id + 0
  JOIN ms_product p ON p.prod_id = s.prod_id
WHERE d.month IN (1, 2, 3)
  AND d.quarter = 1
  AND rs.grp = 2
  AND p.weight <= 40;

-- m08: skew; 4 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
WHERE rs.reason_id IN (0, 39, 38)
  AND sh.speed < 4;

-- m09: opaque; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_city ci ON ci.city_id = c.city_id
  JOIN ms_state sta ON sta.state_id = ci.state_id
WHERE ms_common(p.prod_id)
  AND ms_pct(p.prod_id) < 4
  AND sta.region <> 0;

-- m10: expression; 4 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id + 0
  JOIN ms_date d ON d.date_id = r.date_id - r.ret_id % 60
WHERE rs.grp = 4;

-- m11: many, stale; 8 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales_st s
  JOIN ms_customer_st c ON c.cust_id = s.cust_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_city ci ON ci.city_id = c.city_id
  JOIN ms_store st ON st.store_id = s.store_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
WHERE s.date_id >= 2000
  AND c.segment = 10
  AND ci.population > 100000
  AND sh.speed < 4
  AND dp.kind <> 2;

-- m12: stale; 4 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales_st s
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
WHERE s.date_id >= 2000;

-- m13: correlated, expression; 6 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_dept dp ON dp.dept_id = cat.category_id % 20
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
  JOIN ms_store st ON st.store_id = s.store_id
WHERE p.brand_id BETWEEN 300 AND 309
  AND p.category_id = 30
  AND dp.kind = 0
  AND st.size > 0;

-- m14: skew; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
WHERE c.cust_id % 7919 = 0
  AND dp.kind <> 3;

-- m15: opaque; 4 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_city ci ON ci.city_id = c.city_id
  JOIN ms_state sta ON sta.state_id = ci.state_id
WHERE ms_rare(c.cust_id);

-- m16: expression; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_store st ON st.store_id = s.store_id
  JOIN ms_state sta ON sta.state_id = st.city_id % 50
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_returns r ON r.sale_id = s.sale_id
WHERE c.state_id = st.city_id % 50;

-- m17: many; 9 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_city ci ON ci.city_id = c.city_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
WHERE r.amount > 2
  AND p.weight <= 80
  AND dp.kind <> 1
  AND pr.kind <> 2;

-- m18: stale, correlated, many; 7 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales_st s
  JOIN ms_customer_st c ON c.cust_id = s.cust_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_store st ON st.store_id = s.store_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_city ci ON ci.city_id = c.city_id
  JOIN ms_state sta ON sta.state_id = ci.state_id
WHERE s.date_id >= 2000
  AND c.segment = 10
  AND p.brand_id BETWEEN 800 AND 809
  AND p.category_id = 80
  AND st.size > 1
  AND cat.dept_id <> 0;

-- m19: correlated; 6 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_city ci ON ci.city_id = c.city_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_returns r ON r.sale_id = s.sale_id
WHERE p.brand_id BETWEEN 1700 AND 1709
  AND p.category_id = 170
  AND ci.population > 10000
  AND cat.dept_id <> 2;

-- m20: skew; 6 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_city ci ON ci.city_id = c.city_id
  JOIN ms_state sta ON sta.state_id = ci.state_id
WHERE pr.pct = 0;

-- m21: opaque, expression; 6 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.brand_id / 10
  JOIN ms_city ci ON ci.city_id = c.city_id
  JOIN ms_state sta ON sta.state_id = ci.state_id
WHERE ms_rare(c.cust_id)
  AND cat.dept_id = 15
  AND sta.region <> 3;

-- m22: expression; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id + 0
  JOIN ms_date d ON d.date_id = r.date_id - r.ret_id % 60
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
WHERE rs.grp = 2;

-- m23: many, expression; 9 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_store st ON st.store_id = s.store_id
  JOIN ms_state sta ON sta.state_id = st.city_id % 50
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_date d ON d.date_id = s.date_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id
  JOIN ms_product p ON p.prod_id = s.prod_id
WHERE c.state_id = st.city_id % 50
  AND sh.speed < 4
  AND d.dow < 6
  AND rs.grp <> 3
  AND p.weight <= 60;

-- m24: stale, correlated; 4 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales_st s
  JOIN ms_date d ON d.date_id = s.date_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
  JOIN ms_returns r ON r.sale_id = s.sale_id
WHERE s.date_id >= 2200
  AND d.month IN (4, 5, 6)
  AND d.quarter = 2;

-- m25: correlated, opaque, many; 7 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_date d ON d.date_id = s.date_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_city ci ON ci.city_id = c.city_id
  JOIN ms_state sta ON sta.state_id = ci.state_id
WHERE d.month IN (7, 8, 9)
  AND d.quarter = 3
  AND ms_common(p.prod_id)
  AND ms_pct(p.prod_id) < 4
  AND cat.dept_id <> 3
  AND sta.region <> 3;

-- m26: skew; 3 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id
WHERE rs.reason_id IN (0, 39, 38);

-- m27: opaque; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
  JOIN ms_date d ON d.date_id = s.date_id
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
WHERE ms_common(p.prod_id)
  AND ms_pct(p.prod_id) < 4
  AND sh.speed < 4;

-- m28: expression; 6 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.brand_id / 10
  JOIN ms_store st ON st.store_id = s.store_id
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
WHERE cat.dept_id = 17
  AND c.age < 40
  AND sh.speed < 4;

-- m29: many; 7 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id
  JOIN ms_store st ON st.store_id = s.store_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
WHERE rs.grp <> 2
  AND st.size > 3;

-- m30: stale; 6 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales_st s
  JOIN ms_store st ON st.store_id = s.store_id
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
  JOIN ms_returns r ON r.sale_id = s.sale_id
  JOIN ms_reason rs ON rs.reason_id = r.reason_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
WHERE s.date_id >= 2000
  AND st.size > 3
  AND pr.kind <> 3
  AND sh.speed < 4;

-- m31: correlated, stale; 6 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales_st s
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
WHERE c.age BETWEEN 30 AND 39
  AND c.income_band = 3
  AND c.a = c.b
  AND s.date_id >= 2000;

-- m32: skew; 4 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_promo pr ON pr.promo_id = s.promo_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
WHERE pr.pct = 0
  AND cat.dept_id <> 3;

-- m33: opaque, expression; 5 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_dept dp ON dp.dept_id = cat.category_id % 20
WHERE ms_rare(c.cust_id)
  AND dp.kind = 0;

-- m34: expression; 6 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.brand_id / 10
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_city ci ON ci.city_id = c.city_id
WHERE cat.dept_id = 1
  AND ci.population > 10000;

-- m35: many, skew; 9 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_product p ON p.prod_id = s.prod_id
  JOIN ms_category cat ON cat.category_id = p.category_id
  JOIN ms_dept dp ON dp.dept_id = cat.dept_id
  JOIN ms_date d ON d.date_id = s.date_id
  JOIN ms_ship sh ON sh.ship_id = s.ship_id
  JOIN ms_store st ON st.store_id = s.store_id
  JOIN ms_customer c ON c.cust_id = s.cust_id
  JOIN ms_city ci ON ci.city_id = c.city_id
WHERE p.prod_id % 7919 = 0
  AND dp.kind <> 1
  AND sh.speed < 4
  AND st.size > 2;

-- m36: stale; 3 relations
SELECT count(*) AS n, sum(s.qty) AS qty
FROM ms_sales s
  JOIN ms_customer_st c ON c.cust_id = s.cust_id
  JOIN ms_date d ON d.date_id = s.date_id
WHERE c.segment = 10;


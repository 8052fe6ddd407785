-- TPC-C-like workload for sysbench: options, schema, population, helpers.
--
-- TPC-C-like, NOT an audited TPC-C: it follows the specification's schema (clause 1.3),
-- population rules (4.3.3.1) and transaction profiles (2.4-2.8), but has no terminals (a
-- sysbench thread is one), keying and think times only with --wait=on, no ACID tests and no
-- price/performance. Deviations, all of them
-- options with the specification's value as default: --items (100000) and
-- --customers (3000 per district; orders per district follow it, the last 30% of them
-- undelivered, as 2101..3000 are in the specification).
--
-- Written for tibench from the specification's rules.

sysbench.cmdline.options = {
   warehouses = {"Number of warehouses (the scale factor)", 1},
   items = {"Rows in the item table, and stock rows per warehouse", 100000},
   customers = {"Customers (and initial orders) per district", 3000},
   engine = {"Storage engine of the tables (empty: the server's default)", ""},
   batch = {"Rows per INSERT statement while loading", 200},
   home = {"Home warehouse of each thread: 'thread' (thread id modulo warehouses) " ..
              "or 'random' (drawn at each transaction)", "thread"},
   wait = {"Keying and think times around each transaction (clause 5.2.5), as go-tpc --wait",
           false},
   wait_scale = {"Factor on the keying and think times (1: the specification's)", 1},
}

DISTRICTS = 10
SYLLABLES = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}

-- The C constants of NURand (clause 2.1.6); one set per load, fixed here.
C_LAST_LOAD = 157
C_LAST_RUN = 223 -- differs from C_LAST_LOAD by a delta allowed by clause 2.1.6.1
C_ID = 259
OL_I_ID = 7911

function opt_int(name)
   return tonumber(sysbench.opt[name])
end

function rnd(a, b)
   return sysbench.rand.uniform(a, b)
end

function nurand(a, c, x, y)
   return (bit.bor(rnd(0, a), rnd(x, y)) + c) % (y - x + 1) + x
end

-- a random alphanumeric string of min..max characters (a-string of clause 4.3.2.2)
function astring(min, max)
   return sysbench.rand.string(string.rep("@", rnd(min, max)))
end

-- a random numeric string of min..max digits (n-string)
function nstring(min, max)
   return sysbench.rand.string(string.rep("#", rnd(min, max)))
end

-- an a-string in which 10% of the values hold "ORIGINAL" at a random position
function data_string(min, max)
   local s = astring(min, max)
   if rnd(1, 10) == 1 then
      local at = rnd(1, #s - 7)
      s = s:sub(1, at - 1) .. "ORIGINAL" .. s:sub(at + 8)
   end
   return s
end

function last_name(n)
   return SYLLABLES[math.floor(n / 100) + 1] .. SYLLABLES[math.floor(n / 10) % 10 + 1] ..
      SYLLABLES[n % 10 + 1]
end

function zip()
   return nstring(4, 4) .. "11111"
end

function money(lo, hi) -- a random amount in [lo, hi] with cents
   return string.format("%.2f", rnd(lo * 100, hi * 100) / 100)
end

local function engine_clause()
   local e = sysbench.opt.engine
   if e == nil or e == "" then
      return ""
   end
   return " ENGINE=" .. e
end

SCHEMA = {
   [[CREATE TABLE warehouse (
  w_id INT NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20),
  w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,4),
  w_ytd DECIMAL(12,2), PRIMARY KEY (w_id))]],
   [[CREATE TABLE district (
  d_id INT NOT NULL, d_w_id INT NOT NULL, d_name VARCHAR(10), d_street_1 VARCHAR(20),
  d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9),
  d_tax DECIMAL(4,4), d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))]],
   [[CREATE TABLE customer (
  c_id INT NOT NULL, c_d_id INT NOT NULL, c_w_id INT NOT NULL, c_first VARCHAR(16),
  c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20),
  c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since DATETIME,
  c_credit CHAR(2), c_credit_lim DECIMAL(12,2), c_discount DECIMAL(4,4),
  c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), c_payment_cnt INT,
  c_delivery_cnt INT, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id),
  KEY idx_customer_name (c_w_id, c_d_id, c_last, c_first))]],
   [[CREATE TABLE history (
  h_c_id INT, h_c_d_id INT, h_c_w_id INT, h_d_id INT, h_w_id INT, h_date DATETIME,
  h_amount DECIMAL(6,2), h_data VARCHAR(24),
  KEY idx_history_w (h_w_id, h_d_id))]],
   [[CREATE TABLE new_order (
  no_o_id INT NOT NULL, no_d_id INT NOT NULL, no_w_id INT NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id))]],
   [[CREATE TABLE orders (
  o_id INT NOT NULL, o_d_id INT NOT NULL, o_w_id INT NOT NULL, o_c_id INT,
  o_entry_d DATETIME, o_carrier_id INT, o_ol_cnt INT, o_all_local INT,
  PRIMARY KEY (o_w_id, o_d_id, o_id), KEY idx_orders_customer (o_w_id, o_d_id, o_c_id, o_id))]],
   [[CREATE TABLE order_line (
  ol_o_id INT NOT NULL, ol_d_id INT NOT NULL, ol_w_id INT NOT NULL, ol_number INT NOT NULL,
  ol_i_id INT, ol_supply_w_id INT, ol_delivery_d DATETIME, ol_quantity INT,
  ol_amount DECIMAL(6,2), ol_dist_info CHAR(24),
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))]],
   [[CREATE TABLE item (
  i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2),
  i_data VARCHAR(50), PRIMARY KEY (i_id))]],
   [[CREATE TABLE stock (
  s_i_id INT NOT NULL, s_w_id INT NOT NULL, s_quantity INT,
  s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24),
  s_dist_05 CHAR(24), s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24),
  s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd INT, s_order_cnt INT, s_remote_cnt INT,
  s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))]],
}
TABLES = {"warehouse", "district", "customer", "history", "new_order", "orders",
          "order_line", "item", "stock"}

-- Multi-row INSERTs through sysbench's bulk insert API, `batch` rows per statement.
local function bulk(con, head, n, row)
   local batch = opt_int("batch")
   local i = 1
   while i <= n do
      con:bulk_insert_init(head)
      local last = math.min(n, i + batch - 1)
      for k = i, last do
         con:bulk_insert_next(row(k))
      end
      con:bulk_insert_done()
      i = last + 1
   end
end

local function load_items(con)
   bulk(con, "INSERT INTO item VALUES", opt_int("items"), function(i)
      return string.format("(%d,%d,'%s',%s,'%s')", i, rnd(1, 10000), astring(14, 24),
                           money(1, 100), data_string(26, 50))
   end)
end

local function load_warehouse(con, w)
   local customers = opt_int("customers")
   -- W_YTD and D_YTD start equal to the initial history's sum (clause 3.3.2.8 and 3.3.2.9)
   con:query(string.format(
      "INSERT INTO warehouse VALUES (%d,'%s','%s','%s','%s','%s','%s',%s,%.2f)",
      w, astring(6, 10), astring(10, 20), astring(10, 20), astring(10, 20), astring(2, 2),
      zip(), string.format("%.4f", rnd(0, 2000) / 10000), 10 * DISTRICTS * customers))
   bulk(con, "INSERT INTO stock VALUES", opt_int("items"), function(i)
      local dist = {}
      for k = 1, 10 do
         dist[k] = "'" .. astring(24, 24) .. "'"
      end
      return string.format("(%d,%d,%d,%s,0,0,0,'%s')", i, w, rnd(10, 100),
                           table.concat(dist, ","), data_string(26, 50))
   end)
   for d = 1, DISTRICTS do
      con:query(string.format(
         "INSERT INTO district VALUES (%d,%d,'%s','%s','%s','%s','%s','%s',%s,%.2f,%d)",
         d, w, astring(6, 10), astring(10, 20), astring(10, 20), astring(10, 20),
         astring(2, 2), zip(), string.format("%.4f", rnd(0, 2000) / 10000),
         10 * customers, customers + 1))
      bulk(con, "INSERT INTO customer VALUES", customers, function(c)
         local name = c <= 1000 and c - 1 or nurand(255, C_LAST_LOAD, 0, 999)
         return string.format(
            "(%d,%d,%d,'%s','OE','%s','%s','%s','%s','%s','%s','%s',NOW(),'%s',50000.00," ..
               "%s,-10.00,10.00,1,0,'%s')",
            c, d, w, astring(8, 16), last_name(name), astring(10, 20), astring(10, 20),
            astring(10, 20), astring(2, 2), zip(), nstring(16, 16),
            rnd(1, 10) == 1 and "BC" or "GC", string.format("%.4f", rnd(0, 5000) / 10000),
            astring(300, 500))
      end)
      bulk(con, "INSERT INTO history VALUES", customers, function(c)
         return string.format("(%d,%d,%d,%d,%d,NOW(),10.00,'%s')", c, d, w, d, w,
                              astring(12, 24))
      end)
      -- orders: a random permutation of the customers (clause 4.3.3.1)
      local perm = {}
      for c = 1, customers do
         perm[c] = c
      end
      for c = customers, 2, -1 do
         local j = rnd(1, c)
         perm[c], perm[j] = perm[j], perm[c]
      end
      local delivered = customers - math.floor(customers * 0.3) -- 2100 of 3000
      local ol_cnt = {}
      bulk(con, "INSERT INTO orders VALUES", customers, function(o)
         ol_cnt[o] = rnd(5, 15)
         return string.format("(%d,%d,%d,%d,NOW(),%s,%d,1)", o, d, w, perm[o],
                              o <= delivered and tostring(rnd(1, 10)) or "NULL", ol_cnt[o])
      end)
      local lines = {}
      for o = 1, customers do
         for n = 1, ol_cnt[o] do
            lines[#lines + 1] = {o, n}
         end
      end
      bulk(con, "INSERT INTO order_line VALUES", #lines, function(k)
         local o, n = lines[k][1], lines[k][2]
         local old = o <= delivered
         return string.format("(%d,%d,%d,%d,%d,%d,%s,5,%s,'%s')", o, d, w, n,
                              rnd(1, opt_int("items")), w, old and "NOW()" or "NULL",
                              old and "0.00" or money(0.01, 9999.99), astring(24, 24))
      end)
      bulk(con, "INSERT INTO new_order VALUES", customers - delivered, function(k)
         return string.format("(%d,%d,%d)", delivered + k, d, w)
      end)
   end
end

-- prepare: thread 0 creates the tables and loads the items; every thread loads the
-- warehouses w with (w - 1) % threads == its id (start with --threads <= warehouses).
function cmd_prepare()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   local id = sysbench.tid % sysbench.opt.threads
   if id == 0 then
      for _, ddl in ipairs(SCHEMA) do
         con:query(ddl .. engine_clause())
      end
      load_items(con)
      print(string.format("tpcc: created 9 tables, loaded %d items", opt_int("items")))
      con:query("CREATE TABLE tpcc_loaded (w_id INT PRIMARY KEY)")
   else
      -- wait for thread 0's tables
      while con:query_row("SELECT COUNT(*) FROM information_schema.tables WHERE " ..
                             "table_schema = DATABASE() AND table_name = 'tpcc_loaded'") == "0" do
         os.execute("sleep 0.2")
      end
   end
   for w = id + 1, opt_int("warehouses"), sysbench.opt.threads do
      con:query("BEGIN")
      load_warehouse(con, w)
      con:query("INSERT INTO tpcc_loaded VALUES (" .. w .. ")")
      con:query("COMMIT")
      print(string.format("tpcc: loaded warehouse %d", w))
   end
   con:disconnect()
end

function cmd_cleanup()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   for _, t in ipairs(TABLES) do
      con:query("DROP TABLE IF EXISTS " .. t)
   end
   con:query("DROP TABLE IF EXISTS tpcc_loaded")
   print("tpcc: dropped the TPC-C tables")
   con:disconnect()
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
   cleanup = {cmd_cleanup},
}

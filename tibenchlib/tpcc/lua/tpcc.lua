#!/usr/bin/env sysbench
-- TPC-C-like workload for sysbench (TPC-C-like, NOT an audited TPC-C: see tpcc_common.lua).
--
--   sysbench tpcc.lua --warehouses=N prepare     create the 9 tables and load N warehouses
--   sysbench tpcc.lua --warehouses=N run         the five transactions, mix 45/43/4/4/4
--   sysbench tpcc.lua cleanup                    drop the tables
--
-- One sysbench event is one TPC-C transaction, drawn with the standard mix: New-Order 45%,
-- Payment 43%, Order-Status 4%, Delivery 4%, Stock-Level 4% (clause 5.2.3 minimums). 1% of
-- New-Orders name an unused item and roll back (clause 2.4.1.4). A transaction hit by a
-- deadlock or lock wait timeout is rolled back and drawn again (sysbench's ignorable errors,
-- counted in err/s). At the end each thread prints one line
--   tpcc: thread=<id> new_order=<n> new_order_rollback=<n> payment=<n> order_status=<n>
--   delivery=<n> stock_level=<n>
-- with the transactions it committed (rollbacks: New-Orders rolled back on purpose), and one
-- line per transaction type with the latency of its completed transactions (BEGIN to COMMIT,
-- or to the intended ROLLBACK; keying and think times excluded) in sysbench's own histogram
-- buckets (1024 logarithmic buckets from 0.001 to 100000 ms; index:count of non-empty ones):
--   tpcc-latency: thread=<id> type=<name> n=<n> sum_ms=<ms> max_ms=<ms> buckets=<i>:<n>,...
--
-- --wait=on adds the specification's keying time before and think time after each
-- transaction (clause 5.2.5.7: keying 18/3/2/2/2 s, mean think 12/12/10/5/5 s, think time
-- drawn from a negative exponential capped at 10 times its mean), times --wait-scale. A
-- thread does not start a transaction whose keying time ends after --time.

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
require("tpcc_common")

local con, in_txn, home
local done = {new_order = 0, new_order_rollback = 0, payment = 0, order_status = 0,
              delivery = 0, stock_level = 0}
local W, ITEMS, CUSTOMERS
local NAMES = {"new_order", "payment", "order_status", "delivery", "stock_level"}
local KEYING = {new_order = 18, payment = 3, order_status = 2, delivery = 2, stock_level = 2}
local THINK = {new_order = 12, payment = 12, order_status = 10, delivery = 5, stock_level = 5}
local WAIT, SCALE, DEADLINE
local lat = {}

ffi.cdef([[
typedef struct { long tpcc_sec; long tpcc_nsec; } tpcc_timespec;
int clock_gettime(int clk, tpcc_timespec *tp);
int usleep(unsigned int usec);
]])
local ts = ffi.new("tpcc_timespec")

local function now_ms()
   ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
   return tonumber(ts.tpcc_sec) * 1000 + tonumber(ts.tpcc_nsec) / 1e6
end

-- sysbench's histogram buckets (sb_histogram.c): 1024, logarithmic, 0.001 .. 100000 ms
local H_MIN, H_MAX, H_SIZE = 0.001, 100000, 1024
local H_MULT = (H_SIZE - 1) / (math.log(H_MAX) - math.log(H_MIN))

local function record_latency(name, ms)
   local h = lat[name]
   local i = math.floor((math.log(math.max(ms, H_MIN)) - math.log(H_MIN)) * H_MULT + 0.5)
   i = math.min(math.max(i, 0), H_SIZE - 1)
   h.buckets[i] = (h.buckets[i] or 0) + 1
   h.n, h.sum = h.n + 1, h.sum + ms
   if ms > h.max then
      h.max = ms
   end
end

-- sleep ms milliseconds; when that would end after --time, sleep until --time and return
-- false (sysbench then ends the thread, instead of it spinning through empty events)
local function pause(ms)
   local now = now_ms()
   local left = ms
   if DEADLINE and now + ms > DEADLINE then
      -- past it, a short sleep: sysbench's own clock may end the run a little later
      left = math.max(DEADLINE - now, 10)
   end
   local full = left == ms
   while left > 0 do
      local step = math.min(left, 1000)
      ffi.C.usleep(math.floor(step * 1000))
      left = left - step
   end
   return full
end

function thread_init()
   local drv = sysbench.sql.driver()
   con = drv:connect()
   W, ITEMS, CUSTOMERS = opt_int("warehouses"), opt_int("items"), opt_int("customers")
   home = sysbench.tid % W + 1
   in_txn = false
   WAIT = sysbench.opt.wait == true or sysbench.opt.wait == "on"
   SCALE = tonumber(sysbench.opt.wait_scale) or 1
   for _, name in ipairs(NAMES) do
      lat[name] = {n = 0, sum = 0, max = 0, buckets = {}}
   end
end

-- one write per line: print writes the text and its newline apart, and the threads end
-- together, so another thread's line could land between them
local function say(line)
   io.stdout:write(line .. "\n")
end

function thread_done()
   say(string.format(
      "tpcc: thread=%d new_order=%d new_order_rollback=%d payment=%d order_status=%d " ..
         "delivery=%d stock_level=%d", sysbench.tid, done.new_order, done.new_order_rollback,
      done.payment, done.order_status, done.delivery, done.stock_level))
   for _, name in ipairs(NAMES) do
      local h, parts = lat[name], {}
      for i = 0, H_SIZE - 1 do
         if h.buckets[i] then
            parts[#parts + 1] = i .. ":" .. h.buckets[i]
         end
      end
      say(string.format("tpcc-latency: thread=%d type=%s n=%d sum_ms=%.3f max_ms=%.3f buckets=%s",
                        sysbench.tid, name, h.n, h.sum, h.max, table.concat(parts, ",")))
   end
   con:disconnect()
end

-- a transaction interrupted by an ignorable error is rolled back before it is drawn again
sysbench.hooks.before_restart_event = function(err)
   if in_txn then
      pcall(con.query, con, "ROLLBACK")
      in_txn = false
   end
end

local function q(sql, ...)
   return con:query(string.format(sql, ...))
end

local function row(sql, ...)
   return con:query_row(string.format(sql, ...))
end

local function begin()
   con:query("BEGIN")
   in_txn = true
end

local function commit()
   con:query("COMMIT")
   in_txn = false
end

local function home_warehouse()
   if sysbench.opt.home == "random" then
      return rnd(1, W)
   end
   return home
end

local function other_warehouse(w)
   if W == 1 then
      return w
   end
   local o = rnd(1, W - 1)
   return o >= w and o + 1 or o
end

local function customer_id()
   return nurand(1023, C_ID, 1, CUSTOMERS)
end

-- every generated last name exists: numbers above the customers count are not loaded
local function run_last_name()
   return last_name(nurand(255, C_LAST_RUN, 0, math.min(999, CUSTOMERS - 1)))
end

-- The customer of a Payment or Order-Status: 60% by last name (the middle one of those
-- sorted by first name, clause 2.5.2.2), else by id.
local function find_customer(w, d)
   if rnd(1, 100) <= 60 then
      local rs = q("SELECT c_id FROM customer WHERE c_w_id = %d AND c_d_id = %d AND " ..
                      "c_last = '%s' ORDER BY c_first", w, d, run_last_name())
      local ids = {}
      for i = 1, rs.nrows do
         ids[i] = rs:fetch_row()[1]
      end
      if #ids > 0 then
         return tonumber(ids[math.ceil(#ids / 2)])
      end
   end
   return customer_id()
end

local function new_order()
   local w, d, c = home_warehouse(), rnd(1, DISTRICTS), customer_id()
   local n = rnd(5, 15)
   local rollback = rnd(1, 100) == 1
   local items, all_local = {}, 1
   for k = 1, n do
      local supply = w
      if W > 1 and rnd(1, 100) == 1 then
         supply = other_warehouse(w)
         all_local = 0
      end
      items[k] = {id = nurand(8191, OL_I_ID, 1, ITEMS), supply = supply, qty = rnd(1, 10)}
   end
   if rollback then
      items[n].id = ITEMS + 1 -- an unused item number
   end
   begin()
   row("SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = %d AND " ..
          "c_d_id = %d AND c_id = %d", w, d, c)
   row("SELECT w_tax FROM warehouse WHERE w_id = %d", w)
   local o_id = tonumber(row("SELECT d_next_o_id FROM district WHERE d_w_id = %d AND " ..
                                "d_id = %d FOR UPDATE", w, d))
   q("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %d AND d_id = %d", w, d)
   q("INSERT INTO orders VALUES (%d,%d,%d,%d,NOW(),NULL,%d,%d)", o_id, d, w, c, n, all_local)
   q("INSERT INTO new_order VALUES (%d,%d,%d)", o_id, d, w)
   for k, it in ipairs(items) do
      local price = row("SELECT i_price FROM item WHERE i_id = %d", it.id)
      if price == nil then
         con:query("ROLLBACK")
         in_txn = false
         done.new_order_rollback = done.new_order_rollback + 1
         return
      end
      local qty, dist = row("SELECT s_quantity, s_dist_%02d FROM stock WHERE s_i_id = %d " ..
                               "AND s_w_id = %d FOR UPDATE", d, it.id, it.supply)
      qty = tonumber(qty)
      local left = qty - it.qty >= 10 and qty - it.qty or qty - it.qty + 91
      q("UPDATE stock SET s_quantity = %d, s_ytd = s_ytd + %d, s_order_cnt = s_order_cnt + 1, " ..
           "s_remote_cnt = s_remote_cnt + %d WHERE s_i_id = %d AND s_w_id = %d", left, it.qty,
        it.supply == w and 0 or 1, it.id, it.supply)
      q("INSERT INTO order_line VALUES (%d,%d,%d,%d,%d,%d,NULL,%d,%.2f,'%s')", o_id, d, w, k,
        it.id, it.supply, it.qty, it.qty * tonumber(price), dist)
   end
   commit()
   done.new_order = done.new_order + 1
end

local function payment()
   local w, d = home_warehouse(), rnd(1, DISTRICTS)
   local c_w, c_d = w, d
   if W > 1 and rnd(1, 100) > 85 then
      c_w, c_d = other_warehouse(w), rnd(1, DISTRICTS)
   end
   local amount = money(1, 5000)
   begin()
   q("UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %d", amount, w)
   local w_name = row("SELECT w_name FROM warehouse WHERE w_id = %d", w)
   q("UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %d AND d_id = %d", amount, w, d)
   local d_name = row("SELECT d_name FROM district WHERE d_w_id = %d AND d_id = %d", w, d)
   local c = find_customer(c_w, c_d)
   -- locking reads: a plain SELECT would read the snapshot taken at the transaction's first
   -- plain read, older than the row just locked
   local credit, data = row("SELECT c_credit, c_data FROM customer WHERE c_w_id = %d AND " ..
                               "c_d_id = %d AND c_id = %d FOR UPDATE", c_w, c_d, c)
   if credit == "BC" then
      data = string.format("%d %d %d %d %d %s|", c, c_d, c_w, d, w, amount) .. data
      q("UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, " ..
           "c_payment_cnt = c_payment_cnt + 1, c_data = '%s' WHERE c_w_id = %d AND " ..
           "c_d_id = %d AND c_id = %d", amount, amount, data:sub(1, 500), c_w, c_d, c)
   else
      q("UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, " ..
           "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %d AND c_d_id = %d AND " ..
           "c_id = %d", amount, amount, c_w, c_d, c)
   end
   q("INSERT INTO history VALUES (%d,%d,%d,%d,%d,NOW(),%s,'%s')", c, c_d, c_w, d, w, amount,
     (w_name .. "    " .. d_name):sub(1, 24))
   commit()
   done.payment = done.payment + 1
end

local function order_status()
   local w, d = home_warehouse(), rnd(1, DISTRICTS)
   begin()
   local c = find_customer(w, d)
   row("SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = %d AND " ..
          "c_d_id = %d AND c_id = %d", w, d, c)
   local o_id = row("SELECT o_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND " ..
                       "o_c_id = %d ORDER BY o_id DESC LIMIT 1", w, d, c)
   if o_id ~= nil then
      q("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d " ..
           "FROM order_line WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %d", w, d, o_id)
   end
   commit()
   done.order_status = done.order_status + 1
end

-- the ten districts' oldest undelivered orders in one database transaction (clause 2.7.4)
local function delivery()
   local w, carrier = home_warehouse(), rnd(1, 10)
   begin()
   for d = 1, DISTRICTS do
      local o = row("SELECT no_o_id FROM new_order WHERE no_w_id = %d AND no_d_id = %d " ..
                       "ORDER BY no_o_id LIMIT 1 FOR UPDATE", w, d)
      if o ~= nil then
         q("DELETE FROM new_order WHERE no_w_id = %d AND no_d_id = %d AND no_o_id = %d", w, d, o)
         -- locking reads throughout: the order may have committed after this transaction's
         -- snapshot, which a plain SELECT would read
         local c = row("SELECT o_c_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND " ..
                          "o_id = %d FOR UPDATE", w, d, o)
         q("UPDATE orders SET o_carrier_id = %d WHERE o_w_id = %d AND o_d_id = %d AND " ..
              "o_id = %d", carrier, w, d, o)
         q("UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = %d AND " ..
              "ol_d_id = %d AND ol_o_id = %d", w, d, o)
         local total = row("SELECT COALESCE(SUM(ol_amount), 0) FROM order_line WHERE " ..
                              "ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %d FOR UPDATE", w, d, o)
         q("UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = " ..
              "c_delivery_cnt + 1 WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
           total, w, d, c)
      end
   end
   commit()
   done.delivery = done.delivery + 1
end

local function stock_level()
   local w, d, threshold = home_warehouse(), rnd(1, DISTRICTS), rnd(10, 20)
   begin()
   local next_o = tonumber(row("SELECT d_next_o_id FROM district WHERE d_w_id = %d AND " ..
                                  "d_id = %d", w, d))
   row("SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND " ..
          "s_i_id = ol_i_id WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id >= %d AND " ..
          "ol_o_id < %d AND s_quantity < %d", w, d, next_o - 20, next_o, threshold)
   commit()
   done.stock_level = done.stock_level + 1
end

local RUN = {new_order = new_order, payment = payment, order_status = order_status,
             delivery = delivery, stock_level = stock_level}

function event()
   if DEADLINE == nil then -- at the first event: sysbench starts its clock after thread_init
      local t = tonumber(sysbench.opt.time) or 0
      DEADLINE = t > 0 and now_ms() + t * 1000 or false
   end
   local r = rnd(1, 100)
   local name
   if r <= 45 then
      name = "new_order"
   elseif r <= 88 then
      name = "payment"
   elseif r <= 92 then
      name = "order_status"
   elseif r <= 96 then
      name = "delivery"
   else
      name = "stock_level"
   end
   if WAIT and not pause(KEYING[name] * 1000 * SCALE) then
      return
   end
   local t0 = now_ms()
   RUN[name]()
   record_latency(name, now_ms() - t0)
   if WAIT then
      local mean = THINK[name] * 1000 * SCALE
      pause(math.min(-math.log(1 - sysbench.rand.uniform_double()) * mean, 10 * mean))
   end
end

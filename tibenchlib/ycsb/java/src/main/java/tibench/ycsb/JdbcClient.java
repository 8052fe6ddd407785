package tibench.ycsb;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.Vector;
import java.util.regex.Pattern;

import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * tibench's YCSB binding over JDBC for MySQL-compatible servers (MariaDB, MySQL, TiDB).
 *
 * <p>One connection per client thread (YCSB makes one DB instance per thread). The table has
 * a primary key {@code ycsb_key} and columns {@code field0..fieldN}; tibench creates it before
 * the load. Properties:
 *
 * <ul>
 *   <li>{@code jdbc.url}: the JDBC URL, without credentials;
 *   <li>{@code db.user}: the user name;
 *   <li>{@code db.passwordfile}: a file whose first line is the password (tibench writes it
 *       mode 0600 and removes it after the run), so the password never appears on a command
 *       line or in YCSB's output;
 *   <li>{@code jdbc.batchsize}: rows per batched INSERT during the load (default 100; 1 turns
 *       batching off). Transactions ({@code dotransactions=true}) never batch.
 * </ul>
 */
public class JdbcClient extends DB {
  private static final Pattern IDENT = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final String KEY = "ycsb_key";

  private Connection conn;
  private final Map<String, PreparedStatement> statements = new HashMap<>();
  private PreparedStatement batch;
  private String batchSql;
  private int batchSize;
  private int pending;

  private DBException connectError;

  /**
   * Connects as soon as YCSB hands over the properties. YCSB's {@code DBFactory} calls this from
   * the main thread before "Starting test."; {@link #init()} runs in each client thread after
   * the clock of {@code maxexecutiontime} and of the throughput has started. A cold JVM's first
   * connection (Connector/J's classes loaded, the handshake, the first result set) took one to
   * two seconds on a busy two-core machine: in {@code init()} it ate most of a short run.
   */
  @Override
  public void setProperties(Properties p) {
    super.setProperties(p);
    try {
      connect();
    } catch (DBException e) {
      connectError = e; // reported by init(), as YCSB expects
    }
  }

  @Override
  public void init() throws DBException {
    if (connectError != null) {
      throw connectError;
    }
    if (conn == null) {
      connect();
    }
  }

  private void connect() throws DBException {
    Properties p = getProperties();
    String url = p.getProperty("jdbc.url");
    if (url == null || url.isEmpty()) {
      throw new DBException("property jdbc.url is not set");
    }
    Properties auth = new Properties();
    auth.setProperty("user", p.getProperty("db.user", "root"));
    String pwFile = p.getProperty("db.passwordfile");
    if (pwFile != null && !pwFile.isEmpty()) {
      try {
        List<String> lines = Files.readAllLines(Paths.get(pwFile), StandardCharsets.UTF_8);
        auth.setProperty("password", lines.isEmpty() ? "" : lines.get(0));
      } catch (IOException e) {
        throw new DBException("cannot read db.passwordfile " + pwFile + ": " + e.getMessage());
      }
    }
    boolean load = !Boolean.parseBoolean(p.getProperty("dotransactions", "true"));
    batchSize = load ? Integer.parseInt(p.getProperty("jdbc.batchsize", "100")) : 1;
    try {
      conn = DriverManager.getConnection(url, auth);
      conn.setAutoCommit(batchSize <= 1);
      try (Statement s = conn.createStatement(); ResultSet rs = s.executeQuery("SELECT 1")) {
        rs.next(); // the first result set's classes, loaded before the clock starts
      }
    } catch (SQLException e) {
      throw new DBException("cannot connect to " + url + ": " + e.getMessage());
    }
  }

  @Override
  public void cleanup() throws DBException {
    try {
      flush();
      for (PreparedStatement s : statements.values()) {
        s.close();
      }
      if (conn != null) {
        conn.close();
      }
    } catch (SQLException e) {
      throw new DBException("closing: " + e.getMessage());
    }
  }

  private static String ident(String name) {
    if (!IDENT.matcher(name).matches()) {
      throw new IllegalArgumentException("not a plain SQL identifier: " + name);
    }
    return "`" + name + "`";
  }

  private PreparedStatement prepare(String sql) throws SQLException {
    PreparedStatement s = statements.get(sql);
    if (s == null) {
      s = conn.prepareStatement(sql);
      statements.put(sql, s);
    }
    return s;
  }

  private static String columns(Set<String> fields) {
    if (fields == null) {
      return "*";
    }
    StringBuilder b = new StringBuilder(ident(KEY));
    for (String f : new TreeSet<>(fields)) {
      b.append(", ").append(ident(f));
    }
    return b.toString();
  }

  private static HashMap<String, ByteIterator> row(ResultSet rs, Set<String> fields)
      throws SQLException {
    HashMap<String, ByteIterator> out = new HashMap<>();
    ResultSetMetaData md = rs.getMetaData();
    for (int i = 1; i <= md.getColumnCount(); i++) {
      String name = md.getColumnLabel(i);
      if (KEY.equalsIgnoreCase(name) || (fields != null && !fields.contains(name))) {
        continue;
      }
      String v = rs.getString(i);
      out.put(name, new StringByteIterator(v == null ? "" : v));
    }
    return out;
  }

  @Override
  public Status read(String table, String key, Set<String> fields,
                     Map<String, ByteIterator> result) {
    String sql = "SELECT " + columns(fields) + " FROM " + ident(table)
        + " WHERE " + ident(KEY) + " = ?";
    try {
      PreparedStatement s = prepare(sql);
      s.setString(1, key);
      try (ResultSet rs = s.executeQuery()) {
        if (!rs.next()) {
          return Status.NOT_FOUND;
        }
        if (result != null) {
          result.putAll(row(rs, fields));
        }
        return Status.OK;
      }
    } catch (SQLException e) {
      System.err.println("read " + key + ": " + e.getMessage());
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    String sql = "SELECT " + columns(fields) + " FROM " + ident(table) + " WHERE "
        + ident(KEY) + " >= ? ORDER BY " + ident(KEY) + " LIMIT ?";
    try {
      PreparedStatement s = prepare(sql);
      s.setString(1, startkey);
      s.setInt(2, recordcount);
      try (ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          if (result != null) {
            result.add(row(rs, fields));
          }
        }
      }
      return Status.OK;
    } catch (SQLException e) {
      System.err.println("scan " + startkey + ": " + e.getMessage());
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    List<String> names = new ArrayList<>(new TreeSet<>(values.keySet()));
    StringBuilder b = new StringBuilder("UPDATE ").append(ident(table)).append(" SET ");
    for (int i = 0; i < names.size(); i++) {
      b.append(i == 0 ? "" : ", ").append(ident(names.get(i))).append(" = ?");
    }
    b.append(" WHERE ").append(ident(KEY)).append(" = ?");
    try {
      PreparedStatement s = prepare(b.toString());
      for (int i = 0; i < names.size(); i++) {
        s.setString(i + 1, values.get(names.get(i)).toString());
      }
      s.setString(names.size() + 1, key);
      return s.executeUpdate() == 1 ? Status.OK : Status.NOT_FOUND;
    } catch (SQLException e) {
      System.err.println("update " + key + ": " + e.getMessage());
      return Status.ERROR;
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    List<String> names = new ArrayList<>(new TreeSet<>(values.keySet()));
    StringBuilder b = new StringBuilder("INSERT INTO ").append(ident(table)).append(" (")
        .append(ident(KEY));
    for (String n : names) {
      b.append(", ").append(ident(n));
    }
    b.append(") VALUES (?");
    for (int i = 0; i < names.size(); i++) {
      b.append(", ?");
    }
    b.append(")");
    String sql = b.toString();
    try {
      if (batchSize > 1 && batch != null && !sql.equals(batchSql)) {
        flush();
      }
      PreparedStatement s = batchSize > 1 ? batchStatement(sql) : prepare(sql);
      s.setString(1, key);
      for (int i = 0; i < names.size(); i++) {
        s.setString(i + 2, values.get(names.get(i)).toString());
      }
      if (batchSize <= 1) {
        s.executeUpdate();
        return Status.OK;
      }
      s.addBatch();
      if (++pending >= batchSize) {
        flush();
      }
      return Status.BATCHED_OK;
    } catch (SQLException e) {
      System.err.println("insert " + key + ": " + e.getMessage());
      return Status.ERROR;
    }
  }

  private PreparedStatement batchStatement(String sql) throws SQLException {
    if (batch == null) {
      batch = conn.prepareStatement(sql);
      batchSql = sql;
    }
    return batch;
  }

  private void flush() throws SQLException {
    if (batch == null || pending == 0) {
      return;
    }
    batch.executeBatch();
    conn.commit();
    pending = 0;
  }

  @Override
  public Status delete(String table, String key) {
    String sql = "DELETE FROM " + ident(table) + " WHERE " + ident(KEY) + " = ?";
    try {
      PreparedStatement s = prepare(sql);
      s.setString(1, key);
      return s.executeUpdate() == 1 ? Status.OK : Status.NOT_FOUND;
    } catch (SQLException e) {
      System.err.println("delete " + key + ": " + e.getMessage());
      return Status.ERROR;
    }
  }
}

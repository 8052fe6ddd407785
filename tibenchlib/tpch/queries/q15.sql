-- TPC-H Q15: top supplier (a view, created and dropped around the query; {VIEW} is per stream)
-- param DATE: 1996-01-01
create view {VIEW} (supplier_no, total_revenue) as
    select
        l_suppkey,
        sum(l_extendedprice * (1 - l_discount))
    from
        lineitem
    where
        l_shipdate >= date '{DATE}'
        and l_shipdate < date '{DATE}' + interval 3 month
    group by
        l_suppkey;

select
    s_suppkey,
    s_name,
    s_address,
    s_phone,
    total_revenue
from
    supplier,
    {VIEW}
where
    s_suppkey = supplier_no
    and total_revenue = (
        select
            max(total_revenue)
        from
            {VIEW}
    )
order by
    s_suppkey;

drop view {VIEW};

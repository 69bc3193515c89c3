import type { ComponentChildren } from 'preact';

/** A column of a Table, as data: its heading, what a row shows in it, and a class for its cells if it needs one. */
export interface Column<Row> {
  /** The heading; also each cell's label at a phone's width (`data-label`), where a row becomes a card. */
  header: string;
  /** The heading is for screen readers only (the column of a row's buttons: "Actions"). */
  hiddenHeader?: boolean;
  cell: (row: Row) => ComponentChildren;
  class?: string;
}

interface TableProps<Row> {
  /** What the table holds, said to screen readers (a visually hidden caption): "API keys of the workspace, newest first". */
  caption: string;
  /** The first column heads its rows (`<th scope="row">`). */
  columns: Column<Row>[];
  rows: readonly Row[];
  /** Each row's identity (its id), to keep the rows' elements, and the focus in them, across a reload. */
  rowKey: (row: Row) => string;
  /** A row's data attributes (`{ 'data-post-id': … }`), by which tests and the page's own scripts find it. */
  rowData?: (row: Row) => Record<`data-${string}`, string>;
  /** Said (a paragraph) instead of the table when there is no row; without it, the headings with no row. */
  empty?: string;
  /** Classes besides `responsive` (every table becomes stacked cards, each value labelled, at a phone's width). */
  class?: string;
}

/** Every table of the dashboard's lists: keys, members, invitations, posts, webhooks and deliveries, recycle rules and events. */
export function Table<Row>({ caption, columns, rows, rowKey, rowData, empty, class: className }: TableProps<Row>) {
  if (rows.length === 0 && empty !== undefined) return <p>{empty}</p>;
  return (
    <table class={className ? `responsive ${className}` : 'responsive'}>
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column.header} scope="col" class={column.class}>
              {column.hiddenHeader ? <span class="visually-hidden">{column.header}</span> : column.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)} {...rowData?.(row)}>
            {columns.map((column, index) =>
              index === 0 ? (
                <th key={column.header} scope="row" data-label={column.header} class={column.class}>
                  {column.cell(row)}
                </th>
              ) : (
                <td key={column.header} data-label={column.header} class={column.class}>
                  {column.cell(row)}
                </td>
              ),
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

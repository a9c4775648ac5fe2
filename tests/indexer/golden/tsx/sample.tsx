import React, { useState, useEffect } from "react";
import { Button } from "./Button";
import type { Item } from "../types";

/** Props of the item list. */
interface ListProps {
  items: Item[];
  onSelect?: (item: Item) => void;
}

const PAGE_SIZE = 20;

/**
 * Shows a paginated list of items.
 */
export function ItemList({ items, onSelect }: ListProps): JSX.Element {
  const [page, setPage] = useState<number>(0);
  useEffect(() => {
    document.title = `Page ${page + 1}`;
  }, [page]);
  const visible = items.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
  return (
    <ul className="items">
      {visible.map((item) => (
        <li key={item.id} onClick={() => onSelect?.(item)}>
          {formatName(item)}
        </li>
      ))}
      <Button label="Next" onClick={() => setPage(page + 1)} />
    </ul>
  );
}

function formatName(item: Item): string {
  return item.name.trim();
}

/** Class component kept for the legacy admin page. */
export default class Counter extends React.Component<{ start: number }, { n: number }> {
  state = { n: this.props.start };

  increment = (): void => {
    this.setState({ n: this.state.n + 1 });
  };

  render() {
    return <Button label={String(this.state.n)} onClick={this.increment} />;
  }
}

// Order processing helpers for the storefront.
import express from "express";
import { readFile, writeFile as save } from "node:fs/promises";
import * as path from "node:path";

const crypto = require("crypto");
const MAX_ITEMS = 50;
let counter = 0;

/**
 * Base class for anything that can be priced.
 */
class Priced {
  constructor(amount) {
    this.amount = amount;
  }

  total() {
    return this.amount;
  }
}

/** An order placed by a customer. */
export class Order extends Priced {
  static count = 0;
  #secret = null;

  constructor(id, items) {
    super(items.reduce((sum, it) => sum + it.price, 0));
    this.id = id;
    this.items = items;
    Order.count += 1;
  }

  /** Serialise the order to JSON. */
  async save(dir) {
    const file = path.join(dir, `${this.id}.json`);
    await save(file, JSON.stringify(this));
    return file;
  }

  get size() {
    return this.items.length;
  }
}

// Create a random order id.
export const newId = () => crypto.randomBytes(8).toString("hex");

export default function handler(req, res) {
  const order = new Order(newId(), req.body.items);
  counter++;
  res.json({ id: order.id, total: order.total() });
}

async function load(file) {
  const raw = await readFile(file, "utf8");
  return JSON.parse(raw);
}

const app = express();
app.post("/orders", handler);

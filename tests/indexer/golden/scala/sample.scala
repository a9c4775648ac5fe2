package com.example.orders

import scala.concurrent.{ExecutionContext, Future}
import scala.util.{Failure, Success => Ok}
import java.time._

/** Anything with a price in cents. */
trait Priced {
  def cents: Long
  def euros: BigDecimal = BigDecimal(cents) / 100
}

enum Status {
  case Open, Paid
  case Cancelled
}

/** A line of an order. */
case class Line(sku: String, quantity: Int, unitCents: Long) extends Priced {
  def cents: Long = quantity * unitCents
}

/**
 * An order and its lines.
 */
class Order(val id: String, private var lines: List[Line]) extends Entity(id) with Priced with Serializable {
  private val created = Instant.now()
  var status: Status = Status.Open

  def cents: Long = lines.map(_.cents).sum

  def add(line: Line): Order = {
    lines = line :: lines
    Audit.log(s"added ${line.sku}")
    this
  }

  @deprecated("use pay", "2.0")
  def settle()(implicit ec: ExecutionContext): Future[Unit] = pay()

  override def toString: String = s"Order($id, ${lines.size} lines)"
}

object Order {
  val MaxLines = 50

  def apply(id: String): Order = new Order(id, Nil)
}

type OrderId = String

def total(orders: Seq[Order]): Long =
  orders.map(_.cents).foldLeft(0L)(_ + _)
